package runtime_test

import (
	"context"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// wantShared fails unless every flag is true on Linux (where snapshots are
// mapped copy-on-write); elsewhere instances copy and the flags are false.
func wantShared(t *testing.T, what string, shared ...bool) {
	t.Helper()
	for i, s := range shared {
		if s != (goruntime.GOOS == "linux") {
			t.Fatalf("%s %d: memory shared = %v on %s", what, i, s, goruntime.GOOS)
		}
	}
}

// TestCopyOnWriteInstances: instances made after the snapshot map it
// copy-on-write, and everything that held for copied snapshots holds for
// them: per-call state reset, growth undone, out-of-memory classified, the
// next call to another tool working.
func TestCopyOnWriteInstances(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	echo := loadTool(t, rt, "echo", testwasm.BuildGo(t, "../tools-wasm/echo"), runtime.Limits{})
	state := goGuest(t, "state")

	t.Run("call isolation resets", func(t *testing.T) {
		tl := loadTool(t, rt, "state", state, runtime.Limits{Isolation: runtime.IsolationCall, MaxInstances: 1})
		runtime.DropIdle(tl)
		for range 3 {
			wantOK(t, call(t, tl, `{}`), "1")
		}
		shared, sizes := runtime.IdleMemories(tl)
		if len(shared) != 1 {
			t.Fatalf("%d idle instances, want 1", len(shared))
		}
		wantShared(t, "idle instance", shared...)
		if sizes[0] != uint64(runtime.SnapshotLen(tl)) {
			t.Fatalf("memory %d bytes after reset, snapshot %d", sizes[0], runtime.SnapshotLen(tl))
		}
	})

	t.Run("sessions keep their own state", func(t *testing.T) {
		tl := loadTool(t, rt, "state", state, runtime.Limits{Isolation: runtime.IsolationSession})
		var got []string
		for _, s := range []string{"a", "b", "a", "c", "a", "b"} {
			res := tl.Call(context.Background(), runtime.CallRequest{Session: s})
			if res.IsError {
				t.Fatal(res.Error)
			}
			got = append(got, res.Content[0].Text)
		}
		if strings.Join(got, ",") != "1,1,2,1,3,2" {
			t.Fatalf("session counts %v", got)
		}
		wantShared(t, "session", runtime.SessionMemoryShared(tl, "a"), runtime.SessionMemoryShared(tl, "b"))
		// Closing the module while session instances map its image is safe.
		if err := tl.Module().Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		wantOK(t, call(t, echo, `{"text":"after close"}`), "after close")
	})

	t.Run("growth is undone", func(t *testing.T) {
		tl := loadTool(t, rt, "jq", testwasm.BuildGo(t, "../tools-wasm/jq"), runtime.Limits{MaxInstances: 1})
		runtime.DropIdle(tl)
		big := `{"filter":"[.[] | . * 2] | length","input":[` + strings.Repeat("1,", 200000) + `1]}`
		for range 3 {
			wantOK(t, call(t, tl, big), "200001")
			wantOK(t, call(t, tl, `{"filter":".a","input":{"a":7}}`), "7")
		}
		shared, sizes := runtime.IdleMemories(tl)
		wantShared(t, "jq instance", shared...)
		if len(sizes) != 1 || sizes[0] <= uint64(runtime.SnapshotLen(tl)) {
			t.Fatalf("jq memory sizes %v, snapshot %d: the big input should have grown it", sizes, runtime.SnapshotLen(tl))
		}
	})

	t.Run("out of memory", func(t *testing.T) {
		tl := loadTool(t, rt, "grow", goGuest(t, "grow"), runtime.Limits{Memory: 32 << 20, MaxInstances: 1})
		for range 2 {
			runtime.DropIdle(tl) // every call on a copy-on-write instance
			e := wantKind(t, call(t, tl, `{}`), tool.KindOutOfMemory)
			if !strings.Contains(e.Message, "32 MiB") {
				t.Fatalf("message %q does not name the limit", e.Message)
			}
			wantOK(t, call(t, echo, `{"text":"still here"}`), "still here")
		}
	})
}
