package fs

import "testing"

// BenchmarkCheckRead is the gate's hot path as other capabilities see it: a
// granted read of a plain file, lexical and real-path checks included.
func BenchmarkCheckRead(b *testing.B) {
	e := newEnv(b)
	c := call("bench", []string{"src", "docs"}, nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := e.fs.CheckRead(c, "src/deep/c.go"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServeRead is a whole read request: decode, gate, open, read, reply.
func BenchmarkServeRead(b *testing.B) {
	e := newEnv(b)
	c := call("bench", []string{"src"}, nil)
	raw := []byte(`{"op":"read","path":"src/a.go"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.fs.Serve(b.Context(), c, raw); err != nil {
			b.Fatal(err)
		}
	}
}
