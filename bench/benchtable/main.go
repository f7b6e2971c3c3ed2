// Command benchtable prints the call-path table of docs/performance.md from
// `go test -bench` output: warden beside its baseline, the ratio, and the
// goal. It reads the output of bench's BenchmarkEcho (warden and a native
// go-sdk server, stdio and HTTP) and of runtime/internal/instrument's
// BenchmarkInterleaved (fuel overhead per guest), parsed with
// golang.org/x/perf/benchfmt; a metric seen several times (-count) is
// reported as its median.
//
//	go run ./bench/benchtable echo.txt interleaved.txt
//
// `make bench` runs the benchmarks and this.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"golang.org/x/perf/benchfmt"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtable FILE... (go test -bench output)")
		os.Exit(2)
	}
	m, err := readAll(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	if err := render(os.Stdout, m); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// metrics maps a benchmark name (as benchfmt gives it: without the
// "Benchmark" prefix and the -GOMAXPROCS suffix) and a
// unit to every value seen.
type metrics map[string]map[string][]float64

func readAll(files []string) (metrics, error) {
	m := metrics{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		err = m.read(f, name)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m metrics) read(r io.Reader, fileName string) error {
	br := benchfmt.NewReader(r, fileName)
	for br.Scan() {
		res, ok := br.Result().(*benchfmt.Result)
		if !ok {
			continue // unit metadata or a syntax error line: not a result
		}
		name := string(res.Name.Full())
		if i := strings.LastIndexByte(name, '-'); i > 0 && strings.Trim(name[i+1:], "0123456789") == "" {
			name = name[:i]
		}
		if m[name] == nil {
			m[name] = map[string][]float64{}
		}
		for _, v := range res.Values {
			m[name][v.Unit] = append(m[name][v.Unit], v.Value)
		}
	}
	return br.Err()
}

// get is the median of a metric, and whether it was seen.
func (m metrics) get(name, unit string) (float64, bool) {
	vs := m[name][unit]
	if len(vs) == 0 {
		return 0, false
	}
	s := slices.Clone(vs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

// row is one line of the table.
type row struct {
	what, warden, baseline, ratio, goal string
}

func render(w io.Writer, m metrics) error {
	var rows []row
	latency := func(what, server, transport string, clients int, better string) {
		n := fmt.Sprintf("Echo/%s/native/clients=%d", transport, clients)
		wn := fmt.Sprintf("Echo/%s/%s/clients=%d", transport, server, clients)
		nv, ok1 := m.get(n, "p50-µs")
		wv, ok2 := m.get(wn, "p50-µs")
		if !ok1 || !ok2 {
			return
		}
		rows = append(rows, row{what, fmt.Sprintf("%.0f µs", wv), fmt.Sprintf("native go-sdk server %.0f µs", nv),
			fmt.Sprintf("%.2f×", wv/nv), better + goalMark(wv/nv <= 1.2)})
	}
	latency("stdio tools/call p50, echo", "warden", "stdio", 1, "≤ 1.2×")
	latency("HTTP, 1 client, p50", "warden", "http", 1, "≤ 1.2×")
	// The same tool written in C: warden's call path with a guest that
	// does next to nothing (bench's warden-c server).
	latency("stdio p50, echo in C", "warden-c", "stdio", 1, "≤ 1.2×")
	latency("HTTP, 1 client, p50, echo in C", "warden-c", "http", 1, "≤ 1.2×")
	if nv, ok := m.get("Echo/http/native/clients=16", "calls/s"); ok {
		if wv, ok := m.get("Echo/http/warden/clients=16", "calls/s"); ok {
			rows = append(rows, row{"HTTP, 16 clients, calls/s", fmt.Sprintf("%.0f", wv), fmt.Sprintf("%.0f", nv),
				fmt.Sprintf("%.2f×", wv/nv), "≥ 1.0×" + goalMark(wv/nv >= 1.0)})
		}
	}
	for _, c := range []struct{ what, transport string }{{"server CPU per call, stdio", "stdio"}, {"server CPU per call, HTTP 1 client", "http"}} {
		nv, ok1 := m.get("Echo/"+c.transport+"/native/clients=1", "server-cpu-µs/call")
		wv, ok2 := m.get("Echo/"+c.transport+"/warden/clients=1", "server-cpu-µs/call")
		if ok1 && ok2 {
			rows = append(rows, row{c.what, fmt.Sprintf("%.0f µs", wv), fmt.Sprintf("%.0f µs", nv), fmt.Sprintf("%.2f×", wv/nv), "—"})
		}
	}
	var guests []string
	for name := range m {
		if g, ok := strings.CutPrefix(name, "Interleaved/"); ok {
			guests = append(guests, g)
		}
	}
	sort.Strings(guests)
	for _, g := range guests {
		full, ok := m.get("Interleaved/"+g, "%full")
		if !ok {
			continue
		}
		fuel, _ := m.get("Interleaved/"+g, "%fuel")
		rows = append(rows, row{"fuel + deadline + bounds, " + g, fmt.Sprintf("%+.1f %% (fuel alone %+.1f %%)", full, fuel),
			"uninstrumented", "—", "≤ +10 %" + goalMark(full <= 10)})
	}
	if len(rows) == 0 {
		return errors.New("no BenchmarkEcho or BenchmarkInterleaved results in the input")
	}
	fmt.Fprintln(w, "| what | warden | baseline | ratio | goal |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", r.what, r.warden, r.baseline, r.ratio, r.goal)
	}
	return nil
}

func goalMark(met bool) string {
	if met {
		return " ✓"
	}
	return " ✗"
}
