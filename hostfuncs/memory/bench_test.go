package memory

import (
	"fmt"
	"strings"
	"testing"
)

func benchServe(b *testing.B, m *Memory, raw []byte) {
	b.Helper()
	for b.Loop() {
		if _, err := m.Serve(b.Context(), rw, raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSet measures a durable write (lock, temp file, two fsyncs, rename).
func BenchmarkSet(b *testing.B) {
	for _, size := range []int{1 << 10, 256 << 10} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			m, _ := New(Config{ProjectRoot: b.TempDir()}, nil)
			b.SetBytes(int64(size))
			benchServe(b, m, fmt.Appendf(nil, `{"op":"set","topic":"arch/db","value":%q}`, strings.Repeat("x", size)))
		})
	}
}

func BenchmarkGet(b *testing.B) {
	m, _ := New(Config{ProjectRoot: b.TempDir()}, nil)
	if _, err := m.Serve(b.Context(), rw, fmt.Appendf(nil, `{"op":"set","topic":"arch/db","value":%q}`, strings.Repeat("x", 1<<10))); err != nil {
		b.Fatal(err)
	}
	benchServe(b, m, []byte(`{"op":"get","topic":"arch/db"}`))
}
