// Package packaging holds what warden is published with: the notices
// template and server.json, warden's entry in the MCP registry. Its test
// checks server.json against the registry's published schema.
package packaging

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/warden-run/warden/config"
)

func registrySchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	raw, err := os.ReadFile("testdata/server.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func serverJSON(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("server.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestServerJSON: server.json is valid against the registry's schema (the
// version its $schema names, vendored in testdata), and names the server
// as warden's own server card does by default and as the image's label
// does (the registry checks the label of an OCI package).
func TestServerJSON(t *testing.T) {
	schema, doc := registrySchema(t), serverJSON(t)
	if err := schema.Validate(doc); err != nil {
		t.Fatalf("server.json: %v", err)
	}
	if doc["$schema"] != "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json" {
		t.Errorf("$schema %v is not the vendored schema's", doc["$schema"])
	}
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	if d := cfg.Server.Discovery; doc["name"] != d.Name || doc["description"] != d.Description || doc["title"] != d.Title {
		t.Errorf("server.json names %v %q %q; server.discovery's defaults are %s %q %q", doc["name"], doc["title"], doc["description"], d.Name, d.Title, d.Description)
	}
	dockerfile, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^LABEL io\.modelcontextprotocol\.server\.name="([^"]+)"$`).FindSubmatch(dockerfile)
	if m == nil || string(m[1]) != doc["name"] {
		t.Errorf("the Dockerfile's io.modelcontextprotocol.server.name label is %q, want %v", m, doc["name"])
	}
	pkg := doc["packages"].([]any)[0].(map[string]any)
	if id := pkg["identifier"].(string); !strings.HasSuffix(id, ":"+doc["version"].(string)) {
		t.Errorf("the image %s is not tagged with the entry's version %v", id, doc["version"])
	}
}

// TestServerJSONSchemaRefuses: the vendored schema refuses what the
// registry refuses, so that the test above can fail.
func TestServerJSONSchemaRefuses(t *testing.T) {
	schema := registrySchema(t)
	for name, mutate := range map[string]func(map[string]any){
		"name without a namespace": func(d map[string]any) { d["name"] = "warden" },
		"description over 100":     func(d map[string]any) { d["description"] = strings.Repeat("x", 101) },
		"no version":               func(d map[string]any) { delete(d, "version") },
		"package without transport": func(d map[string]any) {
			delete(d["packages"].([]any)[0].(map[string]any), "transport")
		},
		"oci package of another type": func(d map[string]any) {
			d["packages"].([]any)[0].(map[string]any)["registryType"] = "cargo"
		},
		"icon with a bad size": func(d map[string]any) {
			d["icons"] = []any{map[string]any{"src": "https://e.com/i.png", "sizes": []any{"big"}}}
		},
	} {
		doc := serverJSON(t)
		mutate(doc)
		if err := schema.Validate(doc); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
}
