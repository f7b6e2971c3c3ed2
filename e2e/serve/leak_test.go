package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/mcpserver"
)

// TestNoLeaksAfterCancelStorm runs internal/app and mcpserver in this process,
// over the go-sdk's in-memory transport, and makes 100 concurrent echo and
// loop calls from 4 clients (two per protocol generation), cancelling about
// half of them at random moments. Afterwards every call got what it should,
// the goroutine count settles back to what it was before the storm, no
// module has more instances than its max_instances, and both tools still
// serve.
//
// Not parallel: goroutines are counted process-wide. The other tests of the
// package are parallel, so they wait until this one has returned.
func TestNoLeaksAfterCancelStorm(t *testing.T) {
	const (
		calls   = 100
		clients = 4
	)
	e := newEnv(t, "loop: {timeout: 400ms, max_instances: 3}\necho: {max_instances: 4}", "echo", "loop")
	cfg, err := config.Load(e.config)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	dumpOnFailure(t, "in-process server", logs)
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx := context.Background()
	a, err := app.New(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	if errs := a.Catalog().LoadTools(ctx); len(errs) > 0 {
		t.Fatalf("load tools: %v", errs)
	}
	srv := mcpserver.New(a, a.ServerOptions(mcpserver.Options{Logger: logger, MaxInFlight: maxWarmStacks, QueueWait: time.Minute}))
	defer srv.Close()

	// connect starts one client session; the returned function ends it and
	// waits for the server side to return.
	connect := func(protocol string) (*mcp.ClientSession, func()) {
		t.Helper()
		st, ct := mcp.NewInMemoryTransports()
		serveCtx, stop := context.WithCancel(ctx)
		served := make(chan error, 1)
		go func() { served <- srv.Serve(serveCtx, st) }()
		cs, err := newClient(nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
		if err != nil {
			stop()
			t.Fatalf("connect in memory at %s: %v", protocol, err)
		}
		return cs, func() {
			cs.Close()
			stop()
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}
	}
	protocols := []string{"2025-11-25", "2026-07-28"}

	// Warm up, so that what the first calls start once (timers, caches,
	// pooled instances) is part of the baseline rather than counted as a leak.
	for _, p := range protocols {
		cs, end := connect(p)
		wantEcho(t, cs, "warm")
		wantFailure(t, call(t, cs, "loop", nil), "timeout")
		end()
	}
	baseline := settledGoroutines()
	t.Logf("baseline: %d goroutines", baseline)

	sessions := make([]*mcp.ClientSession, clients)
	ends := make([]func(), clients)
	for i := range sessions {
		sessions[i], ends[i] = connect(protocols[i%len(protocols)])
	}

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	type plan struct {
		tool   string
		cancel time.Duration // 0: never
	}
	plans := make([]plan, calls)
	for i := range plans {
		plans[i].tool = []string{"echo", "loop"}[rng.IntN(2)]
		if rng.IntN(2) == 0 {
			plans[i].cancel = time.Duration(1+rng.IntN(300)) * time.Millisecond
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	start := time.Now()
	for i, p := range plans {
		wg.Go(func() {
			cs := sessions[i%clients]
			callCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			if p.cancel > 0 {
				time.AfterFunc(p.cancel, cancel)
			}
			msg := fmt.Sprintf("call %d", i)
			res, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: p.tool, Arguments: map[string]any{"text": msg}})
			var outcome string
			switch {
			case errors.Is(err, context.Canceled) && p.cancel > 0:
				outcome = "cancelled"
			case err != nil:
				t.Errorf("call %d (%s): %v", i, p.tool, err)
				return
			case p.tool == "echo" && !res.IsError && len(res.Content) == 1 && res.Content[0].(*mcp.TextContent).Text == msg:
				outcome = "echoed"
			case p.tool == "loop" && res.IsError && res.Meta["warden/kind"] == "timeout":
				outcome = "timed out"
			default:
				t.Errorf("call %d (%s): %s", i, p.tool, dump(res))
				return
			}
			mu.Lock()
			outcomes[p.tool+" "+outcome]++
			mu.Unlock()
		})
	}
	wg.Wait()
	t.Logf("%d calls in %v: %v", calls, time.Since(start), outcomes)

	for _, end := range ends {
		end()
	}
	eventuallyGoroutines(t, baseline)

	for _, m := range a.Catalog().Table().Modules() {
		if live, limit := m.Live(), m.Limits().MaxInstances; live > limit {
			t.Errorf("module %s: %d instances alive with no call running, max_instances %d", m.Name(), live, limit)
		} else {
			t.Logf("module %s: %d instances alive (max %d)", m.Name(), live, limit)
		}
	}

	// Every slot came back: both tools serve, and loop still runs to its
	// deadline rather than waiting for an instance that never returns.
	cs, end := connect("2025-11-25")
	wantEcho(t, cs, "after the storm")
	wantFailure(t, call(t, cs, "loop", nil), "timeout")
	end()
}

// settledGoroutines waits for the goroutine count to stop falling and
// returns it.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for range 50 {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m >= n {
			return min(m, n)
		}
		n = m
	}
	return n
}

// parkedWarmStacks counts the server's warm-stack workers parked waiting
// for work (mcpserver/warmstack.go): a bounded pool (server.max_in_flight)
// that lives as long as the server, not a leak of the sessions that grew it.
func parkedWarmStacks() int {
	var b bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&b, 1)
	n := 0
	for _, rec := range strings.Split(b.String(), "\n\n") {
		if !strings.Contains(rec, "(*warmStacks).await") {
			continue
		}
		// A record starts "N @ addresses"; the first also carries the
		// profile's header line before it.
		for _, line := range strings.Split(rec, "\n") {
			var count int
			if _, err := fmt.Sscanf(line, "%d @", &count); err == nil {
				n += count
				break
			}
		}
	}
	return n
}

// maxWarmStacks is the storm server's max_in_flight, which bounds its
// warm-stack workers (parkedWarmStacks).
const maxWarmStacks = 16

// eventuallyGoroutines waits, with a bound, for the goroutine count to come
// back to baseline (the server's parked warm-stack workers aside, within
// their bound), and shows the goroutines that stayed if it does not.
func eventuallyGoroutines(t *testing.T, baseline int) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(20 * time.Second)
	for {
		parked := parkedWarmStacks()
		if parked > maxWarmStacks {
			t.Fatalf("%d warm-stack workers parked, more than the server's max_in_flight (%d)", parked, maxWarmStacks)
		}
		n := runtime.NumGoroutine() - parked
		if n <= baseline {
			t.Logf("goroutines back to %d (baseline %d; %d warm-stack workers parked) %v after the last session ended", n, baseline, parked, time.Since(start))
			return
		}
		if time.Now().After(deadline) {
			var b bytes.Buffer
			pprof.Lookup("goroutine").WriteTo(&b, 1)
			t.Fatalf("%d goroutines 20 s after the storm, baseline %d:\n%s", n, baseline, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
