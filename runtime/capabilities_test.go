package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
)

// TestRequestedCapabilityGrammar: a tool whose descriptor requests a
// capability config could not grant as written is refused at load, with the
// field and the value named (escaped); its well-formed siblings load.
func TestRequestedCapabilityGrammar(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	cases := []struct {
		name, caps, want string
	}{
		{"fs_escape", `{"fs":{"read":["../../etc"]}}`, `capabilities.fs.read[0] "../../etc": `},
		{"fs_nul", `{"fs":{"write":["a\u0000b"]}}`, `capabilities.fs.write[0]`},
		{"fs_empty", `{"fs":{"read":[""]}}`, `path is empty`},
		// "docs,." would show as one path in the review and grant docs and
		// the whole project through the suggested `warden grant` line.
		{"fs_comma", `{"fs":{"read":["docs,."]}}`, `capabilities.fs.read[0] "docs,.": contains a comma`},
		{"fs_blank", `{"fs":{"write":[" out"]}}`, `capabilities.fs.write[0] " out": begins or ends with a blank`},
		{"fs_esc", `{"fs":{"read":["src\u001b[2J"]}}`, `"src\x1b[2J": contains the control or invisible character U+001B at byte 3`},
		{"net_url", `{"net":["https://a.example/path"]}`, `capabilities.net[0] "https://a.example/path"`},
		{"net_rlo", `{"net":["api.example.com\u202e"]}`, `U+202E`},
		{"net_garbage", `{"net":["not a host at all"]}`, `capabilities.net[0]`},
		{"env_bad", `{"env":["HOME=1"]}`, `capabilities.env[0] "HOME=1": "HOME=…" is not a key`},
		{"env_digit", `{"env":["1PATH"]}`, `capabilities.env[0]`},
		// Warden's own configuration: never offered, so never requested.
		{"env_warden", `{"env":["HOME","warden_Server_Token"]}`, `capabilities.env[1] "warden_Server_Token": "warden_Server_Token" is warden's own configuration`},
		{"lsp_bad", `{"lsp":["go lang"]}`, `capabilities.lsp[0] "go lang"`},
		{"topic_bad", `{"memoryTopics":["../x"]}`, `capabilities.memoryTopics[0] "../x"`},
		{"topic_zw", `{"memoryTopics":["a\u200bb"]}`, `U+200B`},
		{"too_many", `{"env":[` + strings.Repeat(`"A",`, 64) + `"B"]}`, `capabilities.env: 65 entries, over the limit of 64`},
	}
	var tools []string
	for _, c := range cases {
		tools = append(tools, fmt.Sprintf(`{"name":%q,"description":"x","inputSchema":{"type":"object"},"capabilities":%s}`, c.name, c.caps))
	}
	tools = append(tools, `{"name":"fine","description":"x","inputSchema":{"type":"object"},"capabilities":`+
		`{"fs":{"read":[".","src","notes:drafts","/abs/path"],"write":["out"]},"net":["api.example.com","*.example.org","http://localhost:8080 private"],`+
		`"env":["HOME","_X1"],"lsp":["go","c++"],"memory":"read","memoryTopics":["arch","arch/db"]}}`)
	desc := `{"tools":[` + strings.Join(tools, ",") + `]}`
	if !json.Valid([]byte(desc)) {
		t.Fatalf("test descriptor is not JSON: %s", desc)
	}
	m, err := rt.Load(context.Background(), "caps", testwasm.WATString(t, module{descriptor: desc}.wat()), runtime.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tools()) != 1 || m.Tools()[0].Descriptor.Name != "fine" {
		t.Fatalf("tools = %v, want just fine", m.Tools())
	}
	got := map[string]string{}
	for _, r := range m.Rejected() {
		got[r.Name] = r.Reason.Error()
	}
	for _, c := range cases {
		if !strings.Contains(got[c.name], c.want) {
			t.Errorf("rejection of %s = %q, want it to contain %q", c.name, got[c.name], c.want)
		}
		if strings.ContainsAny(got[c.name], "\x00\x1b\u202e\u200b") {
			t.Errorf("rejection of %s carries a raw control character: %q", c.name, got[c.name])
		}
	}
}
