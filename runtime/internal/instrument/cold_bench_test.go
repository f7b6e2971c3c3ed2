package instrument

import (
	"crypto/sha256"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkColdGuest measures what a short call costs when it is not hot:
// a Go guest's JSON round trip of one record (the size of a small tool
// call), instrumented as the runtime runs it, against the same work in
// native Go, each right after the host did nothing, 1 ms of other CPU
// work, or a garbage collection. A server's calls are never hot: between
// two of them the MCP layer, the kernel's pipes and the collector run.
// Reports the p50 of the measured call alone (docs/performance.md, "Where
// the rest of the gap goes").
//
//	go test ./runtime/internal/instrument -run '^$' -bench ColdGuest
func BenchmarkColdGuest(b *testing.B) {
	block := make([]byte, 4096)
	var sum [32]byte
	before := []struct {
		name string
		run  func()
	}{
		{"hot", func() {}},
		{"after-cpu", func() {
			// About a millisecond of hashing: other code, little memory.
			for t := time.Now(); time.Since(t) < time.Millisecond; {
				sum = sha256.Sum256(block)
			}
		}},
		{"after-gc", runtime.GC},
	}
	subjects := []struct {
		name string
		call func(b *testing.B) func()
	}{
		{"wasm", func(b *testing.B) func() {
			g := newBenchGuest(b, goFixture(b, "goguest"), "full", "json", true)
			return func() {
				if _, err := g.call(g.fn, 1); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{"native", func(*testing.B) func() { return nativeJSONRoundTrip }},
	}
	for _, s := range subjects {
		for _, c := range before {
			b.Run(s.name+"/"+c.name, func(b *testing.B) {
				call := s.call(b)
				call()
				var took []time.Duration
				for b.Loop() {
					c.run()
					t0 := time.Now()
					call()
					took = append(took, time.Since(t0))
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns/call")
			})
		}
	}
	_ = sum
}

// nativeJSONRoundTrip is the goguest fixture's json export for one record,
// in native Go.
func nativeJSONRoundTrip() {
	type record struct {
		ID    int               `json:"id"`
		Name  string            `json:"name"`
		Tags  []string          `json:"tags"`
		Attrs map[string]string `json:"attrs"`
		Score float64           `json:"score"`
	}
	recs := []record{{ID: 0, Name: strings.Repeat("x", 0), Tags: []string{"a", "b\"c", "ü"},
		Attrs: map[string]string{"k": "v", "i": "a"}, Score: 0}}
	out, err := json.Marshal(recs)
	if err != nil {
		panic(err)
	}
	var back []record
	if err := json.Unmarshal(out, &back); err != nil {
		panic(err)
	}
	if _, err := json.Marshal(back); err != nil {
		panic(err)
	}
}
