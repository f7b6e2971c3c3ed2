package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileText is what a module might put in any text warden passes on: a
// bidi override and isolate, a CSI sequence, and a C1 CSI.
const hostileText = "x\u202ey\u2066z\x1b[2Jw\u009bv"

// rawControls are the characters of hostileText that must never reach a
// file or terminal as they are.
var rawControls = []string{"\u202e", "\u2066", "\x1b", "\u009b"}

// TestHostileTextEscapedInLogAndAudit: a module's log line, its stdout and
// stderr, the path it asks warden.fs for (refused: it requested none) and
// the error it returns all carry a bidi override, a bidi isolate, ESC[ and
// a C1 control; none of them reaches the audit log's bytes or the stderr
// log raw, each is there escaped (\u202e in the audit's JSON strings, as
// `warden tools --json` writes them; \u202e as text on stderr, as on the
// terminal, in slog's quotes), and the session goes on serving.
func TestHostileTextEscapedInLogAndAudit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "surface")
	audit := filepath.Join(e.dir, "audit.log")
	e.withConfig(t, fmt.Sprintf("  audit: %s\n  audit_arguments: true\n", audit))
	cs, stderr := stdioServer(t, e, "", nil)

	res := call(t, cs, "surface", map[string]any{"log": "log " + hostileText, "print": "print " + hostileText, "read": "notes/" + hostileText + ".txt"})
	if !res.IsError || !strings.Contains(dump(res), "notes/") {
		t.Fatalf("fs read of a path it never requested: %s, want refused", dump(res))
	}
	res = call(t, cs, "surface", map[string]any{"error": map[string]any{"kind": "denied", "message": "error " + hostileText}})
	if !res.IsError {
		t.Fatalf("error result: %s", dump(res))
	}
	// Still serving.
	res = call(t, cs, "surface", map[string]any{"content": []map[string]any{{"type": "text", "text": "still here"}}})
	if res.IsError || !strings.Contains(dump(res), "still here") {
		t.Fatalf("after the hostile calls: %s", dump(res))
	}
	// Closing stdin ends the server, which flushes the audit log.
	if err := cs.Close(); err != nil {
		t.Fatalf("warden serve did not exit cleanly: %v", err)
	}

	raw, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	log := stderr.String()
	for sink, text := range map[string]string{"audit log": string(raw), "stderr log": log} {
		for _, c := range rawControls {
			if strings.Contains(text, c) {
				t.Errorf("%s holds %+q raw:\n%s", sink, c, text)
			}
		}
	}
	// The audit log: the refused path (fs line), the arguments, the
	// error's message (the call line's reason), escaped as JSON.
	for _, want := range []string{`"path":"notes/x\u202ey\u2066z\u001b[2Jw\u009bv.txt"`, `"decision":"deny"`, `"read":"notes/x\u202ey\u2066z\u001b[2Jw\u009bv.txt"`,
		`error x\u202ey\u2066z\u001b[2Jw\u009bv"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("audit log lacks %s:\n%s", want, raw)
		}
	}
	// The stderr log: the guest's log line and output and the refusal,
	// escaped as text (termsafe), in slog's quotes (which double the
	// backslash).
	const escaped = `x\\u202ey\\u2066z\\x1b[2Jw\\u009bv`
	for _, want := range []string{`msg="log ` + escaped + `"`, `stdout="print ` + escaped + `"`, `stderr="print ` + escaped + `"`,
		`error="denied: read \"notes/` + escaped + `.txt\": not granted`, `error="denied: reported by tool surface (module surface), not by warden: error ` + escaped + `"`} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr log lacks %s:\n%s", want, log)
		}
	}
}
