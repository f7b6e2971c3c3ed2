package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// backings are the two ways instances get a module's snapshot: mapped
// copy-on-write (Linux) and copied in (every other OS, and Linux when a
// mapping cannot be made), forced here with WithCopiedSnapshots.
var backings = []struct {
	name   string
	opts   func(runtime.Options) runtime.Options
	shared bool // whether instances map the snapshot
}{
	{"mapped", func(o runtime.Options) runtime.Options { return o }, true},
	{"copied", runtime.WithCopiedSnapshots, false},
}

// TestCopiedSnapshotsWithinBudget: with the snapshot copied into each
// instance, as on macOS and Windows, the instance memory budget holds as it
// does with mapped snapshots: the same sessions are evicted at the same
// calls, growth past the budget is refused the same way, Used and Peak never
// pass the limit, and every call answers the same.
func TestCopiedSnapshotsWithinBudget(t *testing.T) {
	type outcome struct {
		answers []string
		stats   runtime.InstanceMemory
	}
	var got []outcome
	for _, b := range backings {
		t.Run(b.name, func(t *testing.T) {
			var o outcome
			rt := newRuntime(t, b.opts(runtime.Options{MaxInstanceMemory: 3 * page}))
			tl := loadTool(t, rt, "counter", counterWAT(t, "counter", 0), runtime.Limits{})
			m := tl.Module()
			for _, s := range []string{"a", "b", "a", "c", "d", "c", "d", "b", "b", "a"} {
				res := sessionCall(t, tl, s)
				if res.IsError {
					t.Fatalf("session %s: %v", s, res.Error)
				}
				o.answers = append(o.answers, fmt.Sprintf("%s=%s %v", s, res.Content[0].Text, res.Meta[tool.MetaFreshState]))
				withinBudget(t, rt)
				runtime.WaitSpare(m)
			}
			// a, called last, keeps its instance.
			if got := runtime.SessionMemoryShared(tl, "a"); got != (b.shared && goruntime.GOOS == "linux") {
				t.Fatalf("session a maps the snapshot: %v", got)
			}

			o.stats = withinBudget(t, rt)
			if o.stats.Evictions != 3 {
				t.Fatalf("the sessions did not evict: %+v", o.stats)
			}

			// Growth past the budget is refused, not granted because the
			// memory is a Go slice.
			rt2 := newRuntime(t, b.opts(runtime.Options{MaxInstanceMemory: 4 * page}))
			grower := loadTool(t, rt2, "grower", counterWAT(t, "grower", 8), runtime.Limits{Isolation: runtime.IsolationCall})
			res := grower.Call(context.Background(), runtime.CallRequest{Arguments: json.RawMessage(`{"grow":true}`)})
			if !res.IsError || res.Error.Kind != tool.KindUnavailable || !strings.Contains(res.Error.Message, "server.max_instance_memory") {
				t.Fatalf("growth past the budget: %+v", res.Error)
			}
			o.answers = append(o.answers, "grow: "+res.Error.Message)
			if s := withinBudget(t, rt2); s.Refusals != 1 {
				t.Fatalf("refusals after the growth: %+v", s)
			}
			got = append(got, o)
		})
	}
	if len(got) != 2 {
		return
	}
	if a, b := strings.Join(got[0].answers, "\n"), strings.Join(got[1].answers, "\n"); a != b {
		t.Errorf("answers differ:\nmapped:\n%s\ncopied:\n%s", a, b)
	}
	if got[0].stats != got[1].stats {
		t.Errorf("budget differs:\nmapped: %+v\ncopied: %+v", got[0].stats, got[1].stats)
	}
}

// TestCopiedSnapshotsReset: a Go guest whose snapshot is copied in is reset
// between calls as a mapped one is: state from a call is gone at the next,
// growth is undone to the snapshot's length, and the answers are the same.
func TestCopiedSnapshotsReset(t *testing.T) {
	state := goGuest(t, "state")
	jq := testwasm.BuildGo(t, "../tools-wasm/jq")
	big := `{"filter":"[.[] | . * 2] | length","input":[` + strings.Repeat("1,", 200000) + `1]}`
	var answers []string
	for _, b := range backings {
		t.Run(b.name, func(t *testing.T) {
			rt := newRuntime(t, b.opts(runtime.Options{}))
			var got []string
			st := loadTool(t, rt, "state", state, runtime.Limits{Isolation: runtime.IsolationCall, MaxInstances: 1})
			runtime.DropIdle(st)
			for range 3 {
				res := call(t, st, `{}`)
				wantOK(t, res, "1")
				got = append(got, res.Content[0].Text)
			}
			tl := loadTool(t, rt, "jq", jq, runtime.Limits{MaxInstances: 1})
			runtime.DropIdle(tl)
			for range 2 {
				for _, args := range []string{big, `{"filter":".a","input":{"a":7}}`} {
					res := call(t, tl, args)
					if res.IsError {
						t.Fatalf("jq: %v", res.Error)
					}
					got = append(got, res.Content[0].Text)
				}
			}
			shared, sizes := runtime.IdleMemories(tl)
			if len(shared) != 1 || shared[0] != (b.shared && goruntime.GOOS == "linux") {
				t.Fatalf("idle jq instances: shared %v", shared)
			}
			if sizes[0] <= uint64(runtime.SnapshotLen(tl)) {
				t.Fatalf("jq memory %d bytes, snapshot %d: the big input should have grown it", sizes[0], runtime.SnapshotLen(tl))
			}
			answers = append(answers, strings.Join(got, ","))
		})
	}
	if len(answers) == 2 && answers[0] != answers[1] {
		t.Errorf("answers differ:\nmapped: %s\ncopied: %s", answers[0], answers[1])
	}
}
