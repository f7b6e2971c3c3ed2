package config

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzDocumentEdit edits arbitrary YAML. An edit either fails and leaves
// the document as it was, or yields valid YAML (which Document has already
// checked decodes to exactly the intended data); it never panics.
func FuzzDocumentEdit(f *testing.F) {
	f.Add(sample, "echo", "net", "api.github.com")
	f.Add("tools:\n  grants:\n    a: {fs: {read: [x]}}\n", "a", "fs.read", "y")
	f.Add("tools:\n  grants:\n    a:\n      env:\n      - A # c\n      - 'B'\n", "a", "env", "C")
	f.Add("tools: {grants: {}}\n", "a", "memory", "read")
	f.Add("x: |\n  a\n   b\ntools:\n  pins: ~\n", "t", "lsp", "go")
	f.Add("tools:\n  grants:\n    a: [1, 2]\n", "a", "env", "X")
	f.Add("tools:\n  grants:\n    \"a\": {env: [\"A\", 'B''s']}\n", "a", "env", "A")
	f.Fuzz(func(t *testing.T, src, toolName, key, value string) {
		d, err := ParseDocument([]byte(src))
		if err != nil {
			return
		}
		change := GrantChange{Key: key, Values: []string{value}}
		for _, op := range []func() error{
			func() error { return d.Grant(toolName, change) },
			func() error { return d.Revoke(toolName, change) },
			func() error { return d.Pin(toolName, strings.Repeat("5e", 32)) },
			func() error { return d.Revoke(toolName, GrantChange{Key: key}) },
		} {
			before := string(d.Bytes())
			if err := op(); err != nil {
				if string(d.Bytes()) != before {
					t.Fatalf("a refused edit (%v) changed the document", err)
				}
				continue
			}
			var v any
			if err := yaml.Unmarshal(d.Bytes(), &v); err != nil {
				t.Fatalf("edit produced invalid YAML: %v\n%s", err, d.Bytes())
			}
		}
	})
}
