package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHostileSleepPastDeadline: a guest asleep for an hour in WASI
// poll_oneoff, which would answer at once on waking, under a 300 ms
// timeout: the call is a timeout naming that timeout (not a success after
// 300 ms), again on the next call, and the session goes on serving. The
// test's own bound is call's minute: were the deadline not to wake the
// guest, the call would end there, failing the test, not hang.
func TestHostileSleepPastDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sleeper: {timeout: 300ms}", "echo")
	e.putWAT(t, "sleeper")
	cs, _ := stdioServer(t, e, "", nil)
	for range 2 {
		res := call(t, cs, "sleeper", map[string]any{})
		wantFailure(t, res, "timeout")
		if msg := text(t, res); !strings.Contains(msg, "sleeper did not finish within 300ms (while ") {
			t.Fatalf("timeout message %q does not name the tool's timeout", msg)
		}
		wantEcho(t, cs, "after the sleep")
	}
}

// TestModuleFileUnreadableAtFirstCall: warden serve lists echo from its
// manifest; before echo's first call its file becomes unreadable (the
// tools dir is moved away, as when a mount goes: no event on the file
// itself, and a rescan finds no dir to act on). The call fails as
// unavailable naming the file and the reason, not internal; echo stays
// listed; with the dir back, the next call works, without a restart.
func TestModuleFileUnreadableAtFirstCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo")
	cache := filepath.Join(e.dir, "cache")
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), "cache_dir: "+built.cacheDir, "cache_dir: "+cache, 1))
	if err := os.WriteFile(e.config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(built.warden, "tools", "--config", e.config)
	cmd.Env = childEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("warden tools (storing the manifest): %v\n%s", err, out)
	}

	cs, _ := stdioServer(t, e, "", nil)
	away := e.tools + ".away"
	if err := os.Rename(e.tools, away); err != nil {
		t.Fatal(err)
	}
	res := call(t, cs, "echo", map[string]any{"text": "unreadable"})
	wantFailure(t, res, "unavailable")
	file := filepath.Join(e.tools, "echo.wasm")
	want := fmt.Sprintf("echo: module echo cannot load: its file %s cannot be read (open: no such file or directory); the next call reads it again", file)
	if msg := text(t, res); !strings.Contains(msg, want) {
		t.Fatalf("message %q, want it to contain %q", msg, want)
	}
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(list.Tools, func(tl *mcp.Tool) bool { return tl.Name == "echo" }) {
		t.Fatalf("echo unlisted after a failed read: %s", dump(list))
	}
	if err := os.Rename(away, e.tools); err != nil {
		t.Fatal(err)
	}
	wantEcho(t, cs, "readable again")
}

// TestHostileAskingForEver: poser asks the client again each time it does
// not answer, under a 2 s timeout and a 200 ms client_wait, of a client
// that never answers. Each wait held the deadline, so the call would wait
// for ever, holding its instance and slot; the waits of one call together
// hold the deadline for one client_wait, and then it runs out: the call is
// a timeout naming both bounds, and the session goes on serving. The
// test's own bound is call's minute.
func TestHostileAskingForEver(t *testing.T) {
	t.Parallel()
	cs, _ := askingServer(t, "poser: {timeout: 2s}", "200ms")
	res := call(t, cs, "poser", map[string]any{"ask": poserAsk, "again": true})
	wantFailure(t, res, "timeout")
	msg := text(t, res)
	for _, want := range []string{"poser did not finish within 2s", "waited 200ms for the client", "tools.defaults.client_wait"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("timeout message %q does not say %q", msg, want)
		}
	}
	wantEcho(t, cs, "after the asking")
}

// askingServer serves poser, granted client: [elicit], and echo over stdio
// under limits and client_wait, to a 2025-11-25 client whose person never
// answers; the decider counts what it was asked.
func askingServer(t *testing.T, limits, clientWait string) (*mcp.ClientSession, *decider) {
	t.Helper()
	e := newEnv(t, limits, "poser", "echo")
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(cfg), "    poser: {}\n", "    poser: {client: [elicit]}\n", 1)
	edited = strings.Replace(edited, "  limits:\n", "  defaults: {client_wait: "+clientWait+"}\n  limits:\n", 1)
	if err := os.WriteFile(e.config, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	d := &decider{block: true, release: make(chan struct{})}
	cs, _ := stdioServer(t, e, "2025-11-25", &mcp.ClientOptions{ElicitationHandler: d.handle})
	t.Cleanup(func() { close(d.release) }) // runs before the session closes
	return cs, d
}

// poserAsk is poser's argument for one form question.
var poserAsk = []map[string]any{{"method": "elicitation/create", "params": map[string]any{"message": "again?",
	"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}}}}}

// TestCancelledAskReleasesItsSlot: poser may run one call at a time
// (max_in_flight: 1) and waits up to ten minutes for a person who never
// answers. The client cancels the call while the person is asked: the call
// ends at once as cancelled, and its slot is free: the next call reaches
// the person (were the slot still held, it would wait server.queue_wait and
// fail as busy, never asking).
func TestCancelledAskReleasesItsSlot(t *testing.T) {
	t.Parallel()
	cs, d := askingServer(t, "poser: {timeout: 10m, max_in_flight: 1}", "10m")
	for i := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		before := d.asked.Load()
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "poser", Arguments: map[string]any{"ask": poserAsk}})
			done <- err
		}()
		eventually(t, fmt.Sprintf("call %d reaches the person", i+1), func() bool { return d.asked.Load() > before })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call %d: %v", i+1, err)
		}
	}
	wantEcho(t, cs, "after the cancelled asks")
}
