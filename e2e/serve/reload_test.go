package serve

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/mcptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHotReload changes the tools dir under a running `warden serve`: a new
// module appears in tools/list and the client hears
// notifications/tools/list_changed; a module overwritten with garbage is
// refused (stderr says why) while the previous version keeps serving, with
// its state; a deleted module disappears, again with list_changed. A
// 2025-11-25 client gets the notifications on its session; a 2026-07-28
// client gets them on its subscriptions/listen stream.
func TestHotReload(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ transport, protocol string }{
		{"stdio", "2025-11-25"},
		{"stdio", "2026-07-28"},
		{"http", "2025-11-25"},
		{"http", "2026-07-28"},
	} {
		t.Run(tc.transport+"/"+tc.protocol, func(t *testing.T) {
			e := newEnv(t, "", "echo")
			var changed atomic.Int64
			client := newClient(&mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed.Add(1) },
			})
			listening := mcptest.ListenAcknowledged(client)
			var cs *mcp.ClientSession
			var stderr *logBuffer
			if tc.transport == "stdio" {
				cs, stderr = stdioServerWith(t, e, tc.protocol, client)
			} else {
				hs := startHTTP(t, e)
				cs, stderr = hs.connectWith(t, tc.protocol, client, nil), hs.stderr
			}
			if names := toolNames(t, cs); !slices.Equal(names, []string{"echo"}) {
				t.Fatalf("tools/list before = %v", names)
			}
			if tc.protocol >= "2026-07-28" {
				// A list_changed sent before the listen stream is registered
				// is lost: wait until the server acknowledged it.
				select {
				case <-listening:
				case <-time.After(30 * time.Second):
					t.Fatal("no notifications/subscriptions/acknowledged")
				}
			}

			// serve loads modules in the background, so echo's own arrival
			// may have been notified already: count from here.
			base := changed.Load()

			// Add: cp state.wasm tools/
			start := time.Now()
			e.install(t, "state")
			eventually(t, "list_changed after adding state.wasm", func() bool {
				return changed.Load() > base && slices.Contains(toolNames(t, cs), "state")
			})
			t.Logf("list_changed %v after state.wasm was written", time.Since(start))
			if names := toolNames(t, cs); !slices.Equal(names, []string{"echo", "state"}) {
				t.Fatalf("tools/list after adding state.wasm = %v", names)
			}
			stateCall := func() string {
				t.Helper()
				res := call(t, cs, "state", nil)
				if res.IsError {
					t.Fatalf("state: %s", dump(res))
				}
				return text(t, res)
			}
			first := stateCall()

			// Break: the file is overwritten with bytes that are no module.
			notified := changed.Load()
			path := filepath.Join(e.tools, "state.wasm")
			if err := os.WriteFile(path, []byte("this is not a wasm module\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			eventually(t, "stderr to say why the broken state.wasm was refused", func() bool {
				return len(stderr.lines("previous version keeps serving", "state.wasm", "error=")) > 0
			})
			t.Logf("refused: %s", stderr.lines("previous version keeps serving", "state.wasm")[0])
			if names := toolNames(t, cs); !slices.Equal(names, []string{"echo", "state"}) {
				t.Errorf("tools/list after breaking state.wasm = %v, want it still served", names)
			}
			// The same instance still serves: a session counts on from where
			// it was, a sessionless call starts fresh again.
			want := "2"
			if tc.transport == "http" && tc.protocol >= "2026-07-28" {
				want = "1"
			}
			if first != "1" || stateCall() != want {
				t.Errorf("state after the broken overwrite: want %s (it counted %s before)", want, first)
			}
			// At most one: echo's own background load may be notified late
			// (a stateless client hears of it on its listen stream).
			if n := changed.Load() - notified; n > 1 {
				t.Errorf("%d list_changed notifications for a refused module, want none", n)
			}

			// Remove.
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			eventually(t, "list_changed after removing state.wasm", func() bool {
				return changed.Load() > notified && !slices.Contains(toolNames(t, cs), "state")
			})
			if names := toolNames(t, cs); !slices.Equal(names, []string{"echo"}) {
				t.Fatalf("tools/list after removing state.wasm = %v", names)
			}
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "state", Arguments: map[string]any{}})
			wantInvalidParams(t, err)
			wantEcho(t, cs, "after a reload")
			// echo's own arrival, when notified after base, adds one.
			if n := changed.Load() - base; n < 2 || n > 3 {
				t.Errorf("%d list_changed notifications for one add and one remove, want 2", n)
			}
		})
	}
}
