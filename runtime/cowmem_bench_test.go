package runtime_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
)

// BenchmarkSessionBackToBack is a new session's first call: a fresh instance
// restored to the post-_initialize state, then the call. The session ends
// after it, so the instance is freed and each iteration makes a new one.
func BenchmarkSessionBackToBack(b *testing.B) {
	rt := newRuntime(b, runtime.Options{})
	tl := loadTool(b, rt, "echo", testwasm.BuildGo(b, "../tools-wasm/echo"), runtime.Limits{Isolation: runtime.IsolationSession})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	i := 0
	for b.Loop() {
		i++
		session := "s" + strconv.Itoa(i)
		if res := tl.Call(ctx, runtime.CallRequest{Arguments: echoRequest, Session: session}); res.IsError {
			b.Fatal(res.Error)
		}
		tl.Module().EndSession(ctx, session)
	}
}

// BenchmarkSessionMemory keeps one instance per session alive (each after
// its first call) and reports what each costs the process, from
// /proc/self/smaps_rollup: Rss (every mapped page, shared ones counted once
// per mapping), Pss (shared pages divided among their mappings: the real
// share) and Private_Dirty (pages only this process wrote). Run it with a
// fixed count, e.g. -benchtime=100x.
func BenchmarkSessionMemory(b *testing.B) {
	rt := newRuntime(b, runtime.Options{})
	tl := loadTool(b, rt, "echo", testwasm.BuildGo(b, "../tools-wasm/echo"), runtime.Limits{Isolation: runtime.IsolationSession})
	ctx := context.Background()
	before := smapsRollup(b)
	var sessions []string
	defer func() {
		for _, s := range sessions {
			tl.Module().EndSession(ctx, s)
		}
	}()
	b.ResetTimer()
	stopCPU := reportCPU(b)
	for b.Loop() {
		session := "m" + strconv.Itoa(len(sessions))
		sessions = append(sessions, session)
		if res := tl.Call(ctx, runtime.CallRequest{Arguments: echoRequest, Session: session}); res.IsError {
			b.Fatal(res.Error)
		}
	}
	b.StopTimer()
	stopCPU()
	after := smapsRollup(b)
	for _, field := range []string{"Rss", "Pss", "Private_Dirty"} {
		b.ReportMetric(float64(after[field]-before[field])/float64(b.N), field+"-KiB/instance")
	}
}

// smapsRollup reads the process's memory totals in KiB (Linux only).
func smapsRollup(b *testing.B) map[string]int64 {
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		b.Skipf("no smaps_rollup: %v", err)
	}
	defer f.Close()
	fields := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var kib int64
		if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kib); err == nil {
			fields[name] = kib
		}
	}
	return fields
}

// BenchmarkEchoFreshStateCOW is BenchmarkEchoFreshState on an instance made
// after the snapshot (the load-time instance is dropped first): on Linux its
// memory maps the snapshot copy-on-write and each reset restores only the
// pages the call wrote.
func BenchmarkEchoFreshStateCOW(b *testing.B) {
	rt := newRuntime(b, runtime.Options{})
	tl := loadTool(b, rt, "echo", testwasm.BuildGo(b, "../tools-wasm/echo"), runtime.Limits{Isolation: runtime.IsolationCall, MaxInstances: 1})
	runtime.DropIdle(tl)
	ctx := context.Background()
	req := runtime.CallRequest{Arguments: echoRequest}
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	for b.Loop() {
		if res := tl.Call(ctx, req); res.IsError {
			b.Fatal(res.Error)
		}
	}
}
