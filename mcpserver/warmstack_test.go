package mcpserver

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type ctxKey struct{}

// waitParked waits until n warm-stack workers are blocked waiting for a
// job: a state of the goroutines, read from their stacks, not a time.
func waitParked(t *testing.T, n int) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for range 100000 {
		parked := 0
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, " [select") && strings.Contains(g, "mcpserver.(*warmStacks).await(") {
				parked++
			}
		}
		if parked == n {
			return
		}
		runtime.Gosched()
	}
	t.Fatalf("%d warm-stack workers never parked", n)
}

// TestWarmStacksRunOnAWorker checks that a request handed to the pool runs
// on a worker, with the caller's context, method and request, and that the
// caller gets its result and error; the next request reuses the idle
// worker rather than starting another.
func TestWarmStacksRunOnAWorker(t *testing.T) {
	p := newWarmStacks(2)
	defer p.stop()
	ctx := context.WithValue(context.Background(), ctxKey{}, "v")
	req := &mcp.ListToolsRequest{}
	wantErr := errors.New("the handler's error")
	for i := range 3 {
		if i > 0 {
			// The worker reports its job's end before it is back waiting
			// for the next: reuse is only there to find once it is.
			waitParked(t, 1)
		}
		var caller, worker int64
		caller = goid()
		res, err := p.do(ctx, func(ctx context.Context, method string, r mcp.Request) (mcp.Result, error) {
			worker = goid()
			if ctx.Value(ctxKey{}) != "v" || method != "m" || r != req {
				t.Errorf("call %d: handler got %v, %q, %v", i, ctx.Value(ctxKey{}), method, r)
			}
			return &mcp.ListToolsResult{NextCursor: "c"}, wantErr
		}, "m", req)
		if lr, ok := res.(*mcp.ListToolsResult); !ok || lr.NextCursor != "c" || err != wantErr {
			t.Fatalf("call %d: got %v, %v", i, res, err)
		}
		if worker == caller {
			t.Errorf("call %d ran on the caller's goroutine", i)
		}
		if n := p.started.Load(); n != 1 {
			t.Errorf("call %d: %d workers started, want 1 (the idle one reused)", i, n)
		}
	}
}

// TestWarmStacksBoundRunsInline checks that with every worker busy and the
// bound reached a request runs at once on its caller's goroutine: the pool
// never makes a request wait for another.
func TestWarmStacksBoundRunsInline(t *testing.T) {
	p := newWarmStacks(1)
	defer p.stop()
	release, running := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := p.do(context.Background(), func(context.Context, string, mcp.Request) (mcp.Result, error) {
			close(running)
			<-release
			return nil, nil
		}, "m", nil)
		first <- err
	}()
	<-running
	caller := goid()
	var ran int64
	if _, err := p.do(context.Background(), func(context.Context, string, mcp.Request) (mcp.Result, error) {
		ran = goid()
		return nil, nil
	}, "m", nil); err != nil {
		t.Fatal(err)
	}
	if ran != caller {
		t.Errorf("with the one worker busy, the request ran on goroutine %d, not its caller's %d", ran, caller)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// TestWarmStacksPanicIsTheCallers checks that a handler's panic on a worker
// is raised again in the caller with the same value, and that the worker
// survives it.
func TestWarmStacksPanicIsTheCallers(t *testing.T) {
	p := newWarmStacks(1)
	defer p.stop()
	type boom struct{ n int }
	func() {
		defer func() {
			if v := recover(); v != (boom{7}) {
				t.Errorf("recovered %v, want boom{7}", v)
			}
		}()
		p.do(context.Background(), func(context.Context, string, mcp.Request) (mcp.Result, error) {
			panic(boom{7})
		}, "m", nil)
		t.Error("do returned after a panic")
	}()
	if _, err := p.do(context.Background(), func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return nil, errors.New("after")
	}, "m", nil); err == nil || err.Error() != "after" {
		t.Fatalf("after the panic: %v", err)
	}
	if n := p.started.Load(); n != 1 {
		t.Errorf("%d workers, want the one that survived the panic", n)
	}
}

// TestWarmStacksStop checks that stop ends every worker and that requests
// then run on their callers' goroutines.
func TestWarmStacksStop(t *testing.T) {
	p := newWarmStacks(4)
	noop := func(context.Context, string, mcp.Request) (mcp.Result, error) { return nil, nil }
	p.do(context.Background(), noop, "m", nil)
	p.stop()
	p.stop() // twice is fine
	p.workers.Wait()
	caller := goid()
	var ran int64
	p.do(context.Background(), func(context.Context, string, mcp.Request) (mcp.Result, error) {
		ran = goid()
		return nil, nil
	}, "m", nil)
	if ran != caller {
		t.Errorf("after stop, the request ran on goroutine %d, not its caller's %d", ran, caller)
	}
	if n := p.started.Load(); n != 0 {
		t.Errorf("%d workers after stop", n)
	}
}

// BenchmarkWarmStacks is the cost the pool removes: a request that goes
// as deep as a tools/call of echo (a 24 KiB chain of frames), run on a
// fresh goroutine per request as the go-sdk does, with and without the
// pool.
//
//	go test ./mcpserver -run '^$' -bench WarmStacks -count 6
func BenchmarkWarmStacks(b *testing.B) {
	deep := func(context.Context, string, mcp.Request) (mcp.Result, error) {
		if deepFrames(24) != 24 {
			return nil, errors.New("?")
		}
		return nil, nil
	}
	run := func(b *testing.B, do func() (mcp.Result, error)) {
		done := make(chan struct{})
		for b.Loop() {
			go func() {
				do()
				done <- struct{}{}
			}()
			<-done
		}
	}
	b.Run("fresh", func(b *testing.B) {
		run(b, func() (mcp.Result, error) { return deep(context.Background(), "m", nil) })
	})
	b.Run("warm", func(b *testing.B) {
		p := newWarmStacks(1)
		defer p.stop()
		run(b, func() (mcp.Result, error) { return p.do(context.Background(), deep, "m", nil) })
	})
}

// deepFrames recurses n times with a 1 KiB frame each.
//
//go:noinline
func deepFrames(n int) int {
	var pad [1 << 10]byte
	keepFrame(pad[:])
	if n == 0 {
		return 0
	}
	return 1 + deepFrames(n-1)
}

// goid is the calling goroutine's id, from the first line of its stack
// trace ("goroutine 7 [running]:").
func goid() int64 {
	var buf [64]byte
	line := string(buf[:runtime.Stack(buf[:], false)])
	line = strings.TrimPrefix(line, "goroutine ")
	id, _, _ := strings.Cut(line, " ")
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		panic("goid: " + line)
	}
	return n
}
