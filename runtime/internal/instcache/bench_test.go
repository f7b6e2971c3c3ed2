package instcache

import (
	"testing"

	"github.com/warden-run/warden/runtime/internal/instrument"
)

// BenchmarkGet is a warm load's lookup of an instrumented module the size
// of the bundled echo's (6 MB): read, checksum, decode.
func BenchmarkGet(b *testing.B) {
	res := sample()
	res.Wasm = make([]byte, 6<<20)
	for i := range res.Wasm {
		res.Wasm[i] = byte(i * 7)
	}
	key := Key("abc", "native", instrument.Config{Fuel: true})
	s := New(b.TempDir(), nil)
	s.Put(key, res)
	b.SetBytes(int64(len(res.Wasm)))
	for b.Loop() {
		if _, ok := s.Get(key); !ok {
			b.Fatal("miss")
		}
	}
}
