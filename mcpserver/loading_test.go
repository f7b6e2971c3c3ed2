package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/tool"
)

// loadingTools is fakeTools with modules loading in the background: finish
// ends one load, adding its tool as a hot reload would.
type loadingTools struct {
	*fakeTools
	mu      sync.Mutex
	loading []string
	ended   chan struct{}
	// awaiting, if set, hears of every AwaitLoad that is about to wait.
	awaiting chan struct{}
}

func (l *loadingTools) options(opts Options) Options {
	opts.Loader = l
	return opts
}

func (l *loadingTools) Loading() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.loading...)
}

func (l *loadingTools) AwaitLoad(ctx context.Context) bool {
	l.mu.Lock()
	loading, ended, awaiting := len(l.loading) > 0, l.ended, l.awaiting
	l.mu.Unlock()
	if !loading {
		return false
	}
	if awaiting != nil {
		awaiting <- struct{}{}
	}
	select {
	case <-ended:
		return true
	case <-ctx.Done():
		return false
	}
}

func (l *loadingTools) finish(module string) {
	l.reload(append(l.List(), desc(module))...)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, m := range l.loading {
		if m == module {
			l.loading = append(l.loading[:i], l.loading[i+1:]...)
		}
	}
	close(l.ended)
	l.ended = make(chan struct{})
}

// While modules load, tools/list answers with what is loaded and names the
// rest in _meta; a call of a tool not loaded yet waits for its load.
func TestWhileLoading(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			tools := &loadingTools{fakeTools: newFakeTools(desc("echo")), loading: []string{"late"}, ended: make(chan struct{})}
			// ListWait < 0: the list answers at once with what is loaded.
			s, _ := newServer(t, tools, Options{ListWait: -1})
			cs := connect(t, s, tr, nil)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tools) != 1 || fmt.Sprint(res.Meta[tool.MetaLoading]) != "[late]" {
				t.Fatalf("tools/list while loading: %d tools, _meta %v", len(res.Tools), res.Meta)
			}
			called := make(chan *mcp.CallToolResult, 1)
			go func() {
				r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "late"})
				if err != nil {
					t.Errorf("tools/call late: %v", err)
				}
				called <- r
			}()
			tools.finish("late")
			if r := <-called; r == nil || r.IsError {
				t.Fatalf("tools/call late after its load: %+v", r)
			}
			res, err = cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := res.Meta[tool.MetaLoading]; ok || len(res.Tools) != 2 {
				t.Fatalf("tools/list after loading: %d tools, _meta %v", len(res.Tools), res.Meta)
			}
			// Nothing loading: an unknown tool is refused at once.
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nosuch"}); err == nil {
				t.Fatal("tools/call of an unknown tool succeeded")
			}
		})
	}
}

// TestListWaitsForLoads: a tools/list asked while a module loads waits for
// the load (a client that lists once gets every tool), and the wait is
// bounded by ListWait: past it, the list says what is still loading.
func TestListWaitsForLoads(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			tools := &loadingTools{fakeTools: newFakeTools(desc("echo")), loading: []string{"late"}, ended: make(chan struct{}),
				awaiting: make(chan struct{}, 1)}
			s, _ := newServer(t, tools, Options{ListWait: time.Hour})
			cs := connect(t, s, tr, nil)
			listed := make(chan *mcp.ListToolsResult, 1)
			go func() {
				res, err := cs.ListTools(context.Background(), nil)
				if err != nil {
					t.Errorf("tools/list: %v", err)
				}
				listed <- res
			}()
			// The load ends only once the list waits for it: a list that
			// did not wait would answer with one tool.
			<-tools.awaiting
			tools.finish("late")
			res := <-listed
			if res == nil || len(res.Tools) != 2 || res.Meta[tool.MetaLoading] != nil {
				t.Fatalf("tools/list across a load: %+v", res)
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		tools := &loadingTools{fakeTools: newFakeTools(desc("echo")), loading: []string{"never"}, ended: make(chan struct{})}
		s, _ := newServer(t, tools, Options{ListWait: time.Millisecond})
		cs := connect(t, s, transports[0], nil)
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil || len(res.Tools) != 1 || fmt.Sprint(res.Meta[tool.MetaLoading]) != "[never]" {
			t.Fatalf("tools/list past ListWait: %+v %v", res, err)
		}
	})
}

// countingTools ends loads the way internal/app does: the module leaves
// Loading (and the count moves) before its change notification is sent.
type countingTools struct {
	*loadingTools
	ended uint64
}

func (c *countingTools) options(opts Options) Options {
	opts = c.loadingTools.options(opts)
	opts.LoadsEnded = c.LoadsEnded
	return opts
}

func (c *countingTools) LoadsEnded() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ended
}

// endSilently ends the load of module with the notification not sent yet:
// the tool is in the set, the module no longer loading, the count moved.
func (c *countingTools) endSilently(module string) {
	c.set(append(c.List(), desc(module))...)
	c.mu.Lock()
	c.loading = nil
	c.ended++
	c.mu.Unlock()
}

// A list that names nothing loading is complete, and a call of a tool whose
// load just ended finds it, even before the load's notification arrives.
func TestLoadEndedBeforeItsNotification(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			tools := &countingTools{loadingTools: &loadingTools{fakeTools: newFakeTools(desc("echo")), loading: []string{"late"}, ended: make(chan struct{})}}
			s, _ := newServer(t, tools, Options{ListWait: -1})
			cs := connect(t, s, tr, nil)
			tools.endSilently("late")
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, loading := res.Meta[tool.MetaLoading]; loading || len(res.Tools) != 2 {
				t.Fatalf("list after the load ended: %d tools, _meta %v", len(res.Tools), res.Meta)
			}
			tools.endSilently("later")
			if r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "later"}); err != nil || r.IsError {
				t.Fatalf("call of a tool whose load just ended: %v %+v", err, r)
			}
		})
	}
}
