package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
pkg: github.com/warden-run/warden/bench
BenchmarkEcho/stdio/native/clients=1-2         	    2000	    414657 ns/op	      2412 calls/s	       300.0 p50-µs	      2354 p99-µs	 700 server-cpu-µs/call
BenchmarkEcho/stdio/warden/clients=1-2         	    2000	    813916 ns/op	      1229 calls/s	       330.0 p50-µs	      4562 p99-µs	 500 server-cpu-µs/call
BenchmarkEcho/stdio/warden/clients=1-2         	    2000	    813916 ns/op	      1229 calls/s	       390.0 p50-µs	      4562 p99-µs	 500 server-cpu-µs/call
BenchmarkEcho/stdio/warden/clients=1-2         	    2000	    813916 ns/op	      1229 calls/s	       360.0 p50-µs	      4562 p99-µs	 500 server-cpu-µs/call
BenchmarkEcho/stdio/warden-c/clients=1-2       	    2000	    713916 ns/op	      1429 calls/s	       315.0 p50-µs	      3562 p99-µs	 400 server-cpu-µs/call
BenchmarkEcho/http/native/clients=16-2         	    2000	   1007499 ns/op	       1000 calls/s	     12183 p50-µs	     61829 p99-µs
BenchmarkEcho/http/warden/clients=16-2         	    2000	   1280305 ns/op	       900.0 calls/s	     15899 p50-µs	     71195 p99-µs
time=2026-11-26T16:30:18.158Z level=INFO msg="not a benchmark line"
pkg: github.com/warden-run/warden/runtime/internal/instrument
BenchmarkInterleaved/SHA256-2         	      16	  63685572 ns/op	        8.5 %fuel	        9.5 %full
`

// TestRender: ratios come from medians (three stdio runs: 330, 390, 360 →
// 360 µs against 300), goals are marked met or not, and lines that are
// not results are skipped.
func TestRender(t *testing.T) {
	m := metrics{}
	if err := m.read(strings.NewReader(sample), "sample"); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := render(&out, m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| stdio tools/call p50, echo | 360 µs | native go-sdk server 300 µs | 1.20× | ≤ 1.2× ✓ |",
		"| HTTP, 16 clients, calls/s | 900 | 1000 | 0.90× | ≥ 1.0× ✗ |",
		"| server CPU per call, stdio | 500 µs | 700 µs | 0.71× | — |",
		"| stdio p50, echo in C | 315 µs | native go-sdk server 300 µs | 1.05× | ≤ 1.2× ✓ |",
		"| fuel + deadline + bounds, SHA256 | +9.5 % (fuel alone +8.5 %) | uninstrumented | — | ≤ +10 % ✓ |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks\n%s\nin\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "HTTP, 1 client") {
		t.Errorf("a row without its results:\n%s", out.String())
	}
}

func TestRenderNothing(t *testing.T) {
	if err := render(&strings.Builder{}, metrics{}); err == nil {
		t.Error("an empty input rendered a table")
	}
}
