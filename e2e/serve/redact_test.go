package serve

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretValuesNeverLogged: a tool granted a secret (an env value, a
// value of its config) can put it in its log line, its stdout, its error or
// its arguments; warden writes none of them to its stderr log or the audit
// log, which people and collectors read who were never granted it. The
// value, and the bearer token (server.token or serve --token), are masked
// "[redacted]" in both, whatever the tool does; the client gets what the
// tool returns (that is the grant), and the server goes on serving.
func TestSecretValuesNeverLogged(t *testing.T) {
	const envSecret, configSecret, hostSecret, flagSecret = "s3cr3t-env-value-7f3a", "s3cr3t-config-value-9b1c", "s3cr3t-host-value-4e2d", "s3cr3t-flag-token-1a5e"
	e := newEnv(t, "", "surface")
	audit := filepath.Join(e.dir, "audit.log")
	t.Setenv("E2E_REDACT_HOST", hostSecret)
	e.withConfig(t, fmt.Sprintf("  audit: %s\n  audit_arguments: true\n"+
		"env:\n  values:\n    API_TOKEN: {value: %s}\n    HOST_TOKEN: {from_env: E2E_REDACT_HOST}\n", audit, envSecret))
	b, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	granted := bytes.Replace(b, []byte("    surface: {}\n"), []byte("    surface: {config: {api-key: {value: "+configSecret+"}}}\n"), 1)
	if bytes.Equal(granted, b) {
		t.Fatalf("no grants entry of surface in:\n%s", b)
	}
	if err := os.WriteFile(e.config, granted, 0o644); err != nil {
		t.Fatal(err)
	}
	// --token is HTTP's, but a secret however it is given: redacted on
	// stdio too.
	cs, stderr := stdioServer(t, e, "", nil, "--token", flagSecret)

	for _, secret := range []string{envSecret, configSecret, hostSecret, flagSecret} {
		res := call(t, cs, "surface", map[string]any{"log": "log " + secret, "print": "print " + secret})
		if res.IsError {
			t.Fatalf("log and print: %s", dump(res))
		}
		res = call(t, cs, "surface", map[string]any{"error": map[string]any{"kind": "failed", "message": "error " + secret}})
		if !res.IsError || !strings.Contains(dump(res), secret) {
			t.Fatalf("the client gets the tool's own error as it is: %s", dump(res))
		}
	}
	res := call(t, cs, "surface", map[string]any{"content": []map[string]any{{"type": "text", "text": "still here"}}})
	if res.IsError || !strings.Contains(dump(res), "still here") {
		t.Fatalf("after the calls: %s", dump(res))
	}
	if err := cs.Close(); err != nil { // flushes the audit log
		t.Fatalf("warden serve did not exit cleanly: %v", err)
	}
	raw, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	for sink, text := range map[string]string{"audit log": string(raw), "stderr log": stderr.String()} {
		for _, secret := range []string{envSecret, configSecret, hostSecret, flagSecret} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds the secret %s:\n%s", sink, secret, text)
			}
		}
		if !strings.Contains(text, "[redacted]") {
			t.Errorf("%s shows no [redacted] where the secrets were:\n%s", sink, text)
		}
	}
}
