package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	releaseSessions = flag.Int("release.sessions", 200, "BenchmarkRelease: HTTP sessions that each call a tool once and close")
	releaseClients  = flag.Int("release.clients", 64, "BenchmarkRelease: sessions open at once")
	releaseSettle   = flag.Duration("release.settle", 30*time.Second, "BenchmarkRelease: how long after the load RSS is read again")
)

// BenchmarkRelease: does warden give memory back? A fresh `warden serve
// --http` with 8 tools; release.clients clients at a time open a session,
// call a tool once and close the session, release.sessions sessions in
// all. It reports the warden process's VmRSS before the load (after a
// first call of each tool, so every module is loaded), at its peak (VmHWM), right after
// the last session closed, and release.settle later (the goal: within
// 100 MB of before), in MB.
//
//	go test ./bench -run '^$' -bench Release -benchtime 1x -timeout 30m
func BenchmarkRelease(b *testing.B) {
	e := newScaleEnv(b, 8)
	for range b.N {
		b.StopTimer()
		s := startHTTPWarden(b, e.warm)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		// One call of each tool first: what is measured is what sessions
		// leave, not the modules' loading (their compiled code and images
		// stay until tools.defaults.idle_ttl).
		if cs, err := s.connect(ctx, sessionProtocol); err != nil {
			b.Fatal(err)
		} else {
			for i := range 8 {
				if err := callOnce(ctx, cs, toolName(1+i)); err != nil {
					b.Fatal(err)
				}
			}
			cs.Close()
		}
		before, _, err := procStatus(s.pid())
		if err != nil {
			b.Fatal(err)
		}
		var failures atomic.Int64
		var firstErr atomic.Value
		next := atomic.Int64{}
		var wg sync.WaitGroup
		b.StartTimer()
		for range *releaseClients {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < *releaseSessions; i = int(next.Add(1)) - 1 {
					cs, err := s.connect(ctx, sessionProtocol)
					if err == nil {
						err = callOnce(ctx, cs, toolName(1+i%8))
						cs.Close()
					}
					if err != nil {
						failures.Add(1)
						firstErr.CompareAndSwap(nil, fmt.Errorf("session %d: %w", i, err))
					}
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		after, peak, err := procStatus(s.pid())
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(*releaseSettle) // the figure is RSS this long after the load
		settled, _, err := procStatus(s.pid())
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("settled: %s; /healthz %s", rssSplit(s.pid()), healthz(s.url))
		cancel()
		s.stop()
		if err, _ := firstErr.Load().(error); err != nil {
			b.Errorf("%d failures, the first: %v", failures.Load(), err)
		}
		b.ReportMetric(before, "before-MB")
		b.ReportMetric(peak, "peak-MB")
		b.ReportMetric(after, "after-MB")
		b.ReportMetric(settled, "settled-MB")
		b.ReportMetric(settled-before, "settled-delta-MB")
		b.StartTimer()
	}
}

// rssSplit says what VmRSS is made of: anonymous pages (the Go heap,
// private copies of instance pages), file pages, shared memory (the memfd
// images that instances map; VmRSS counts such a page once per mapping).
func rssSplit(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, key := range []string{"RssAnon", "RssFile", "RssShmem"} {
		if kb, err := statusKB(string(b), key); err == nil {
			parts = append(parts, fmt.Sprintf("%s %.0f MB", key, kb/1024))
		}
	}
	return strings.Join(parts, ", ")
}

// healthz returns the server's /healthz body (its instance memory).
func healthz(mcpURL string) string {
	resp, err := http.Get(strings.TrimSuffix(mcpURL, "/mcp") + "/healthz")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return strings.TrimSpace(string(body))
}
