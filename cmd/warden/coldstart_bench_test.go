package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// BenchmarkColdStart runs the real binary, one process per iteration, on
// the bundled tools (bin/tools: `make tools`), as a person or a pod does
// (docs/performance.md):
//
//	call-cold   warden call echo, the compile cache empty
//	tools-cold  warden tools, the compile cache empty
//	call-warm   warden call echo, the cache warm (the first call after a
//	            restart: list from the manifests, load echo's compiled code)
//	tools-warm  warden tools, the cache warm
//
// WARDEN_BENCH_BINARY runs another build (the baseline, for benchstat);
// WARDEN_BENCH_TOOLS another tools dir. Besides the wall time, each
// reports the process's CPU time (user and system, cpu-ms/op), which the
// other processes of a shared machine inflate far less, and its peak RSS
// (peak-rss-MB, where the platform reports it).
func BenchmarkColdStart(b *testing.B) {
	bin := os.Getenv("WARDEN_BENCH_BINARY")
	if bin == "" {
		bin = wardenBinary(b)
	}
	tools := os.Getenv("WARDEN_BENCH_TOOLS")
	if tools == "" {
		tools, _ = filepath.Abs(filepath.Join("..", "..", "bin", "tools"))
	}
	if _, err := os.Stat(filepath.Join(tools, "echo.wasm")); err != nil {
		b.Skipf("no bundled tools in %s (make tools): %v", tools, err)
	}
	dir := b.TempDir()
	config := func(cache string) string {
		path := filepath.Join(dir, "config.yaml")
		body := fmt.Sprintf("project: {root: %q}\ntools:\n  dir: %q\n  cache_dir: %q\n  grants: {echo: {}, jq: {}, hash: {}}\n", dir, tools, cache)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
		return path
	}
	// usage sums the CPU time and the largest peak RSS of the timed runs
	// of the sub-benchmark running.
	var usage struct {
		cpu     time.Duration
		peakRSS int64
		runs    int
	}
	run := func(b *testing.B, cfg string, args ...string) {
		cmd := exec.Command(bin, append(args, "--config", cfg)...)
		cmd.Env = append(os.Environ(), "WARDEN_CONFIG=")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("warden %v: %v\n%s", args, err, out)
		}
		usage.cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		usage.peakRSS = max(usage.peakRSS, peakRSS(cmd.ProcessState))
		usage.runs++
	}
	// measured reports the usage of the runs body times; body resets it
	// once its untimed set-up runs are done.
	measured := func(body func(b *testing.B)) func(b *testing.B) {
		return func(b *testing.B) {
			body(b)
			if usage.runs > 0 {
				b.ReportMetric(float64(usage.cpu.Microseconds())/1e3/float64(usage.runs), "cpu-ms/op")
				if usage.peakRSS > 0 {
					b.ReportMetric(float64(usage.peakRSS)/(1<<20), "peak-rss-MB")
				}
			}
		}
	}
	reset := func() { usage.cpu, usage.peakRSS, usage.runs = 0, 0, 0 }
	call := []string{"call", "echo", `{"text":"hi"}`}
	cold := func(args []string) func(b *testing.B) {
		return func(b *testing.B) {
			reset()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				cfg := config(filepath.Join(dir, fmt.Sprintf("cold-%s-%d", args[0], i)))
				b.StartTimer()
				run(b, cfg, args...)
				b.StopTimer()
				os.RemoveAll(filepath.Join(dir, fmt.Sprintf("cold-%s-%d", args[0], i)))
				b.StartTimer()
			}
		}
	}
	b.Run("call-cold", measured(cold(call)))
	b.Run("tools-cold", measured(cold([]string{"tools"})))
	// The warm cache is made by the first warm sub-benchmark that runs,
	// untimed, with `warden cache warm`: it compiles every module and
	// stores its manifest. (Not `warden tools`, a one-shot command, which
	// compiles nothing in the background: Runtime.ForOneShot.)
	warm := filepath.Join(dir, "warm-config")
	var warmOnce sync.Once
	warmUp := func(b *testing.B) {
		warmOnce.Do(func() {
			if err := os.MkdirAll(warm, 0o755); err != nil {
				b.Fatal(err)
			}
			src := config(filepath.Join(dir, "warm"))
			if err := os.Rename(src, filepath.Join(warm, "config.yaml")); err != nil {
				b.Fatal(err)
			}
			run(b, filepath.Join(warm, "config.yaml"), "cache", "warm")
		})
	}
	b.Run("call-warm", measured(func(b *testing.B) {
		warmUp(b)
		reset()
		for b.Loop() {
			run(b, filepath.Join(warm, "config.yaml"), call...)
		}
	}))
	b.Run("tools-warm", measured(func(b *testing.B) {
		warmUp(b)
		reset()
		for b.Loop() {
			run(b, filepath.Join(warm, "config.yaml"), "tools")
		}
	}))
}
