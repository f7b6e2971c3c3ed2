package config

import (
	"strings"
	"testing"
)

// TestValidateOrderIsStable: one bad file gives one message. The errors
// come in the order of the file, by line (and column on one line), though
// Validate visits maps (tools.grants, lsp.languages, security.signatures,
// its own tables of server keys) whose order Go does not keep: loading the
// same file again reports the same errors in the same order.
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
	// The errors come in the order of the file.
	at := -1
	for _, k := range []string{
		":3: server.max_in_flight_per_client:", ":4: server.max_queued:", ":5: server.max_queued_per_client:",
		":6: server.header_timeout:", ":7: server.body_timeout:", ":8: server.idle_timeout:",
		":10: security.confirm:", ":11: security.prompts:",
		":13: security.signatures.\"ghcr.io/acme/tools\".identity_regexp:", ":13: security.signatures.\"ghcr.io/acme/tools\".issuer_regexp:",
		":16: lsp.languages.cobol.", ":17: lsp.languages.ada.", ":18: lsp.languages.basic.",
		":23: tools.grants.zeta.config.k3:", ":24: tools.grants.zeta.config.k1:", ":25: tools.grants.zeta.config.k2:",
		":28: tools.grants.alpha.config.b:", ":29: tools.grants.alpha.config.a:",
	} {
		i := strings.Index(first, path+k)
		if i < 0 || i < at {
			t.Errorf("%s is missing or out of file order in\n%s", k, first)
			break
		}
		at = i
	}
}
