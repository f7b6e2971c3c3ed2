package config

import (
	"strings"
	"testing"
)

// TestValidateOrderIsStable: one bad file gives one message. Validate
// visits maps (tools.grants, lsp.languages, security.signatures, its own
// tables of server keys) in sorted key order, so loading the same file
// again reports the same errors in the same order, not in map order.
func TestValidateOrderIsStable(t *testing.T) {
	path := writeConfig(t, `
server:
  max_in_flight_per_client: -1
  max_queued: -1
  max_queued_per_client: -1
  header_timeout: -1s
  body_timeout: -1s
  idle_timeout: -1s
security:
  confirm: maybe
  prompts: perhaps
  signatures:
    "ghcr.io/acme/tools": {identity_regexp: "(", issuer_regexp: "["}
lsp:
  languages:
    cobol: {command: ""}
    ada: {command: ""}
    basic: {command: ""}
tools:
  grants:
    zeta:
      config:
        k3: {value: x, from_env: X}
        k1: {value: x, from_env: X}
        k2: {value: x, from_env: X}
    alpha:
      config:
        b: {value: x, from_env: X}
        a: {value: x, from_env: X}
`)
	_, err := Load(path)
	if err == nil {
		t.Fatal("a file with many errors loaded")
	}
	first := err.Error()
	for i := range 50 {
		if _, err := Load(path); err == nil || err.Error() != first {
			t.Fatalf("load %d reported\n%v\nwhere the first reported\n%s", i+2, err, first)
		}
	}
	// Within each map, the errors come in key order.
	for _, keys := range [][]string{
		{"server.max_in_flight_per_client:", "server.max_queued:", "server.max_queued_per_client:"},
		{"server.body_timeout:", "server.header_timeout:", "server.idle_timeout:"},
		{"security.confirm:", "security.prompts:"},
		{".identity_regexp:", ".issuer_regexp:"},
		{"lsp.languages.ada.", "lsp.languages.basic.", "lsp.languages.cobol."},
		{"tools.grants.alpha.config.a:", "tools.grants.alpha.config.b:", "tools.grants.zeta.config.k1:", "tools.grants.zeta.config.k2:", "tools.grants.zeta.config.k3:"},
	} {
		at := -1
		for _, k := range keys {
			i := strings.Index(first, k)
			if i < 0 || i < at {
				t.Errorf("%s is missing or out of key order in\n%s", k, first)
				break
			}
			at = i
		}
	}
}
