package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/catalog"
	"github.com/warden-run/warden/runtime"
)

// TestLoadView drives the terminal view of a cold start through two
// compiles, one failing: each end is a line of its own (n/m, name, time),
// the status line names what still compiles, and nothing is left on the
// status line at the end. A module name cannot move the cursor.
func TestLoadView(t *testing.T) {
	var out bytes.Buffer
	v := &loadView{w: &out, running: make(map[string]time.Time)}
	ev := func(name string, done bool, finished, total int, err error) catalog.LoadProgress {
		return catalog.LoadProgress{LoadEvent: runtime.LoadEvent{Module: name, Done: done, Elapsed: 1200 * time.Millisecond, Err: err},
			Finished: finished, Total: total}
	}
	v.report(ev("echo", false, 0, 1, nil))
	v.report(ev("evil\x1b[2J", false, 0, 2, nil))
	if s := out.String(); !strings.Contains(s, "compiling 0/2: echo") || strings.Contains(s, "\x1b[2J") {
		t.Fatalf("status line: %q", s)
	}
	v.report(ev("echo", true, 1, 2, nil))
	v.report(ev("evil\x1b[2J", true, 2, 2, errors.New("trapped")))
	s := out.String()
	for _, want := range []string{"[1/2] compiled echo in 1.2s\n", "[2/2] evil", "failed after 1.2s\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q: %q", want, s)
		}
	}
	if strings.Contains(s, "\x1b[2J") {
		t.Errorf("a module name reached the terminal raw: %q", s)
	}
	if v.drawn || !strings.HasSuffix(s, "\n") {
		t.Errorf("status line left on screen: %q", s)
	}
}
