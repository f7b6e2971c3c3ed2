package observe

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/principal"
)

func fixedClock() time.Time { return time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC) }

func readLines(t *testing.T, path string) []Line {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Line
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// A crash mid-batch loses the lines of that batch, and only those.
func TestAuditCrashLosesOnlyTheUnflushedBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	flushed := make(chan int, 10)
	a, err := OpenAudit(AuditOptions{Path: path, BatchLines: 3, tick: make(chan time.Time), flushed: flushed})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		a.write(&Line{Time: "t", Who: "local", Via: "local", Event: "call", Tool: fmt.Sprint(i)})
	}
	for range 2 {
		if n := <-flushed; n != 3 {
			t.Fatalf("flushed %d lines, want batches of 3", n)
		}
	}
	close(a.crash) // the seventh line is at most in the buffer
	<-a.done
	lines := readLines(t, path)
	if len(lines) != 6 {
		t.Fatalf("%d lines survived the crash, want the 6 of the two flushed batches", len(lines))
	}
	for i, l := range lines {
		if l.Tool != fmt.Sprint(i) {
			t.Fatalf("line %d is tool %q", i, l.Tool)
		}
	}
}

// The file rotates before a line would pass the bound, and only Keep
// rotated files remain.
func TestAuditRotationKeepsTheConfiguredFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	a, err := OpenAudit(AuditOptions{Path: path, MaxSize: 1000, Keep: 2, BatchLines: 1, tick: make(chan time.Time)})
	if err != nil {
		t.Fatal(err)
	}
	h := New(Options{Audit: a, Now: fixedClock}).(*Hub)
	// Each line is ~200 bytes: 40 lines make 8 KB, several rotations.
	for i := range 40 {
		h.Decision(context.Background(), Decision{Event: "gate", Detail: "block", Denied: true, Reason: fmt.Sprintf("%03d %s", i, strings.Repeat("x", 100))})
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		info, _ := e.Info()
		if info.Size() > 1000 {
			t.Errorf("%s is %d bytes, past the bound of 1000", e.Name(), info.Size())
		}
	}
	if strings.Join(names, ",") != "audit.log,audit.log.1,audit.log.2" {
		t.Fatalf("files %v, want audit.log and two rotated files", names)
	}
	// The newest lines are in audit.log, the ones before in .1.
	cur, prev := readLines(t, path), readLines(t, path+".1")
	if !strings.HasPrefix(cur[len(cur)-1].Reason, "039 ") || !strings.HasPrefix(prev[len(prev)-1].Reason, fmt.Sprintf("%03d ", 39-len(cur))) {
		t.Fatalf("rotation order wrong: last of current %q, last of .1 %q", cur[len(cur)-1].Reason[:4], prev[len(prev)-1].Reason[:4])
	}
}

// A full queue drops lines, counts them, and says so in the log.
func TestAuditDropsAreCountedAndLogged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	hold := make(chan struct{})
	a, err := OpenAudit(AuditOptions{Path: path, Queue: 1, tick: make(chan time.Time), hold: hold})
	if err != nil {
		t.Fatal(err)
	}
	// The writer is held: the queue takes one line, the next two drop.
	a.write(&Line{Event: "call", Tool: "queued"})
	a.write(&Line{Event: "call", Tool: "dropped1"})
	a.write(&Line{Event: "call", Tool: "dropped2"})
	if got := a.Dropped(); got != 2 {
		t.Fatalf("Dropped() = %d, want 2", got)
	}
	close(hold)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	var tools []string
	for _, l := range lines {
		if l.Event == "audit_dropped" {
			tools = append(tools, fmt.Sprintf("dropped=%d", l.Dropped))
			continue
		}
		tools = append(tools, l.Tool)
	}
	if got := strings.Join(tools, ","); got != "queued,dropped=2" {
		t.Fatalf("log holds %s", got)
	}
}

// Guest-controlled strings are clipped and escaped; arguments only with
// AuditArguments.
func TestAuditLineFields(t *testing.T) {
	for _, withArgs := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "audit.log")
		a, err := OpenAudit(AuditOptions{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		h := New(Options{Audit: a, Now: fixedClock, AuditArguments: withArgs})
		ctx := principal.With(context.Background(), principal.Principal{Subject: "alice", Via: principal.ViaOAuth})
		ctx = h.CallStarted(ctx, CallStart{Tool: "t", Module: "m", Session: "s1", Known: true, Arguments: json.RawMessage(`{"q":"secret"}`)})
		h.CapabilityUse(ctx, Use{Capability: "fs", Op: "read", Path: "a\nb\x1b[31m" + strings.Repeat("é", 600), Mode: "read"})
		h.CallEnded(ctx, CallEnd{Kind: "ok", Fuel: 42, Duration: 1500 * time.Microsecond})
		a.Close()
		raw, _ := os.ReadFile(path)
		if strings.Count(string(raw), "\n") != 2 || strings.ContainsAny(strings.TrimSuffix(string(raw), "\n"), "\x1b") {
			t.Fatalf("lines not escaped: %q", raw)
		}
		lines := readLines(t, path)
		use, end := lines[0], lines[1]
		if use.Who != "alice" || use.Via != "oauth" || use.Session != "s1" || use.Event != "fs" || use.Decision != "allow" || use.Time != "2026-11-26T12:00:00Z" {
			t.Fatalf("use line %+v", use)
		}
		if len(use.Path) > maxPath+len("…") || !strings.HasSuffix(use.Path, "…") || !strings.HasPrefix(use.Path, "a\nb\x1b[31m") {
			t.Fatalf("path not clipped: %d bytes", len(use.Path))
		}
		if end.Event != "call" || end.Kind != "ok" || *end.Fuel != 42 || *end.DurationMs != 1.5 {
			t.Fatalf("call line %+v", end)
		}
		if withArgs != (string(end.Arguments) == `{"q":"secret"}`) || (!withArgs && strings.Contains(string(raw), "secret")) {
			t.Fatalf("audit_arguments %v: arguments %s", withArgs, end.Arguments)
		}
	}
}

// TestAuditLineIsTerminalSafe: whatever a guest or client put in any string
// of a line (every string field, found by reflection so that a field added
// later is covered, and the arguments) reaches the file with no C1
// control, bidi control or invisible character raw: each is a \uXXXX
// escape (termsafe.JSON, as `warden tools --json`), and a JSON reader gets
// the exact string back.
func TestAuditLineIsTerminalSafe(t *testing.T) {
	const hostile = "p\u202eq\u2066r\x1b[31ms\u009bt\u200bu\x7f"
	path := filepath.Join(t.TempDir(), "audit.log")
	a, err := OpenAudit(AuditOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	var l Line
	v := reflect.ValueOf(&l).Elem()
	var fields []string
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.String {
			f.SetString(v.Type().Field(i).Name + ":" + hostile)
			fields = append(fields, v.Type().Field(i).Name)
		}
	}
	args, _ := json.Marshal(map[string]any{"q" + hostile: []string{hostile}})
	l.Arguments = args
	a.write(&l)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"\u202e", "\u2066", "\x1b", "\u009b", "\u200b", "\x7f"} {
		if strings.Contains(string(raw), c) {
			t.Fatalf("%+q raw in the audit file: %s", c, raw)
		}
	}
	for _, esc := range []string{`\u202e`, `\u2066`, `\u001b[31m`, `\u009b`, `\u200b`, `\u007f`} {
		if n := strings.Count(string(raw), esc); n != len(fields)+2 {
			t.Errorf("%s appears %d times, want %d (%d string fields, the argument key and value): %s", esc, n, len(fields)+2, len(fields), raw)
		}
	}
	back := readLines(t, path)[0]
	bv := reflect.ValueOf(back)
	for _, name := range fields {
		if got := bv.FieldByName(name).String(); got != name+":"+hostile {
			t.Errorf("%s read back as %q", name, got)
		}
	}
	var gotArgs, wantArgs any
	json.Unmarshal(back.Arguments, &gotArgs)
	json.Unmarshal(args, &wantArgs)
	if !reflect.DeepEqual(gotArgs, wantArgs) {
		t.Errorf("arguments read back as %s, want %s", back.Arguments, args)
	}
}
