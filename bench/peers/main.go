// Command peers is the peers benchmark (make bench-peers): warden's stdio
// tools/call beside other MCP servers of the same echo tool — the official
// go-sdk, mark3labs/mcp-go, the TypeScript SDK — and the transport's floor
// (a bufio + encoding/json loop). Each server runs as a child process,
// driven by one raw client (newline-delimited JSON-RPC on its stdin, no SDK)
// that does the initialize handshake, warms up, then makes measured echo
// calls one at a time. The servers take turns over a few rounds, a fresh
// process each round, so that a busy moment of the machine spreads over
// all of them. It prints p50 and p99 latency and the server's CPU time per
// call (from /proc), per server, and with -bench FILE the same per round in
// Go's benchmark format, for benchstat.
//
//	go run . -warden ../../bin/warden -tools ../../bin/tools -floor BIN -gosdk BIN -mcpgo BIN -ts DIR/server.mjs
//
// A server whose flag is empty is left out.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	var (
		warden = flag.String("warden", "", "the warden binary; it serves echo.wasm of -tools")
		tools  = flag.String("tools", "", "the folder with the bundled tools' echo.wasm")
		wflags = flag.String("warden-flags", "", "flags added to `warden serve`, space-separated (e.g. --cpuprofile FILE)")
		cache  = flag.String("cache", "", "warden's compile cache (default: a temporary one, so the first round compiles echo)")
		floor  = flag.String("floor", "", "the floor server binary (servers/floor)")
		gosdk  = flag.String("gosdk", "", "the go-sdk server binary (servers/gosdk)")
		mcpgo  = flag.String("mcpgo", "", "the mcp-go server binary (servers/mcpgo)")
		ts     = flag.String("ts", "", "the TypeScript SDK server's server.mjs, with its node_modules beside it")
		node   = flag.String("node", "node", "the node binary for -ts")
		rounds = flag.Int("rounds", 3, "rounds; each server runs once per round")
		warmup = flag.Int("warmup", 500, "calls before measuring, per server and round")
		calls  = flag.Int("calls", 4000, "measured calls per server and round")
		bench  = flag.String("bench", "", "also write the runs in Go's benchmark format to this file, for benchstat")
		hung   = flag.Duration("timeout", 30*time.Second, "a server that writes nothing for this long is killed and fails the run")
	)
	flag.Parse()
	if err := checkRuns(*rounds, *warmup, *calls, *hung); err != nil {
		fail(err)
	}
	dir, err := os.MkdirTemp("", "peers")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	var servers []server
	if *warden != "" {
		w, err := wardenServer(dir, *warden, filepath.Join(*tools, "echo.wasm"), *cache, strings.Fields(*wflags)...)
		if err != nil {
			fail(err)
		}
		servers = append(servers, w)
	}
	for _, s := range []server{{name: "go-sdk", cmd: []string{*gosdk}}, {name: "mcp-go", cmd: []string{*mcpgo}}, {name: "ts-sdk", cmd: []string{*node, *ts}}, {name: "floor", cmd: []string{*floor}}} {
		if s.cmd[len(s.cmd)-1] != "" {
			servers = append(servers, s)
		}
	}
	if len(servers) == 0 {
		fail(fmt.Errorf("no server given"))
	}
	fmt.Printf("machine: %s, %d cores, load %s at start\n", cpuModel(), runtime.NumCPU(), loadavg())
	runs, err := runRounds(servers, *rounds, *warmup, *calls, *hung, os.Stderr)
	if err != nil {
		fail(err)
	}
	fmt.Printf("load %s at end; %d rounds of %d warm-up and %d measured calls per server\n\n", loadavg(), *rounds, *warmup, *calls)
	writeTable(os.Stdout, servers, runs)
	if *bench != "" {
		f, err := os.Create(*bench)
		if err != nil {
			fail(err)
		}
		writeBench(f, runs)
		if err := f.Close(); err != nil {
			fail(err)
		}
	}
}

// checkRuns refuses the flags no run can be made of: the hang watch ticks
// every timeout (time.NewTicker panics on a period that is not positive),
// and the table's percentiles need a measured call.
func checkRuns(rounds, warmup, calls int, timeout time.Duration) error {
	switch {
	case timeout <= 0:
		return fmt.Errorf("-timeout %s: want a positive duration (how long a server may write nothing before it is killed as hung)", timeout)
	case rounds < 1:
		return fmt.Errorf("-rounds %d: want at least 1", rounds)
	case calls < 1:
		return fmt.Errorf("-calls %d: want at least 1", calls)
	case warmup < 0:
		return fmt.Errorf("-warmup %d: want 0 or more", warmup)
	}
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "peers:", err)
	os.Exit(1)
}

// wardenServer is `warden serve` of a folder holding echo.wasm alone (so
// that no other bundled module is loaded), with echo granted and the given
// compile cache; flags are added to warden serve's.
func wardenServer(dir, warden, echo, cache string, flags ...string) (server, error) {
	wasm, err := os.ReadFile(echo)
	if err != nil {
		return server{}, fmt.Errorf("warden's echo tool: %w", err)
	}
	tools := filepath.Join(dir, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		return server{}, err
	}
	if err := os.WriteFile(filepath.Join(tools, "echo.wasm"), wasm, 0o644); err != nil {
		return server{}, err
	}
	if cache == "" {
		cache = filepath.Join(dir, "cache")
	}
	if cache, err = filepath.Abs(cache); err != nil {
		return server{}, err
	}
	config := filepath.Join(dir, "warden.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil,
		"tools:\n  dir: %s\n  cache_dir: %s\n  grants:\n    echo: {}\nlog:\n  level: warn\n", tools, cache), 0o644); err != nil {
		return server{}, err
	}
	return server{name: "warden", cmd: append([]string{warden, "serve", "--config", config}, flags...)}, nil
}

// runRounds measures every server once per round, in turn, and logs each
// run to log. Before the rounds each server is started once for one call,
// unmeasured, so that what a server does once per machine rather than per
// process (warden's compile of echo into its cache) is not in round 1. A
// server that writes nothing for timeout fails the rounds.
func runRounds(servers []server, rounds, warmup, calls int, timeout time.Duration, log io.Writer) ([]run, error) {
	if err := checkRuns(rounds, warmup, calls, timeout); err != nil {
		return nil, err
	}
	for _, s := range servers {
		if _, err := measure(s, 0, 1, 0, timeout); err != nil {
			return nil, fmt.Errorf("the first start: %w", err)
		}
	}
	var runs []run
	for round := 1; round <= rounds; round++ {
		for _, s := range servers {
			r, err := measure(s, round, warmup, calls, timeout)
			if err != nil {
				return nil, fmt.Errorf("round %d: %w", round, err)
			}
			fmt.Fprintf(log, "round %d %-7s p50 %s p99 %s cpu/call %s\n", round, s.name, us(r.percentile(0.5)), us(r.percentile(0.99)), us(r.cpuPerCall()))
			runs = append(runs, r)
		}
	}
	return runs, nil
}

// writeTable writes per server the range over the rounds of p50, p99 and
// CPU per call, in µs, and p50 as a multiple of the floor's.
func writeTable(w io.Writer, servers []server, runs []run) {
	floor := runsOf(runs, "floor")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\tp50 µs\tp99 µs\tserver CPU µs/call\tp50 / floor's\t")
	for _, s := range servers {
		rs := runsOf(runs, s.name)
		ratio := "—"
		if len(floor) > 0 {
			ratio = fmt.Sprintf("%.1fx", float64(median(rs, p50))/float64(median(floor, p50)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", s.name, span(rs, p50), span(rs, p99), span(rs, run.cpuPerCall), ratio)
	}
	tw.Flush()
}

// writeBench writes one line per run in Go's benchmark format.
func writeBench(w io.Writer, runs []run) {
	fmt.Fprintf(w, "goos: %s\ngoarch: %s\npkg: github.com/warden-run/warden/bench/peers\ncpu: %s\n", runtime.GOOS, runtime.GOARCH, cpuModel())
	for _, r := range runs {
		fmt.Fprintf(w, "BenchmarkPeers/server=%s\t%d\t%d ns/op\t%d p99-ns\t%d server-cpu-ns/op\n",
			r.server, len(r.latencies), r.percentile(0.5).Nanoseconds(), r.percentile(0.99).Nanoseconds(), r.cpuPerCall().Nanoseconds())
	}
}

func p50(r run) time.Duration { return r.percentile(0.5) }
func p99(r run) time.Duration { return r.percentile(0.99) }

func runsOf(runs []run, name string) []run {
	var out []run
	for _, r := range runs {
		if r.server == name {
			out = append(out, r)
		}
	}
	return out
}

// span is "min–max" of f over runs in µs, or one figure when they agree.
func span(runs []run, f func(run) time.Duration) string {
	v := make([]time.Duration, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	lo, hi := us(slices.Min(v)), us(slices.Max(v))
	if lo == hi {
		return lo
	}
	return lo + "–" + hi
}

func median(runs []run, f func(run) time.Duration) time.Duration {
	v := make([]time.Duration, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Microsecond)) }

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for line := range strings.Lines(string(b)) {
		if name, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimLeft(name, "\t :"))
		}
	}
	return "unknown CPU"
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
