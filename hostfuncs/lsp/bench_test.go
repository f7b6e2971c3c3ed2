package lsp

import (
	"context"
	"testing"
	"time"
)

// BenchmarkColdStart measures a first query: starting gopls, its
// initialize handshake and workspace load, and one documentSymbol. Stopping
// the server is not timed.
func BenchmarkColdStart(b *testing.B) {
	root := newFixture(b)
	langs := goplsLanguages(b)
	ctx := context.Background()
	for b.Loop() {
		m, err := NewManager(Config{Languages: langs, ShutdownGrace: 100 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.DocumentSymbols(ctx, Target{Language: "go", Root: root}, "shapes/shapes.go"); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		m.Close(ctx)
		b.StartTimer()
	}
}

// BenchmarkWarm measures queries through the capability (gate checks and
// JSON included) on a running gopls.
func BenchmarkWarm(b *testing.B) {
	e := sharedGopls(b)
	call := callWith("go")
	ctx := context.Background()
	for _, bc := range []struct{ name, req string }{
		{"documentSymbol", `{"op":"documentSymbol","path":"shapes/shapes.go"}`},
		{"definition", `{"op":"definition","path":"main.go","line":12,"column":21}`},
		{"references", `{"op":"references","path":"shapes/shapes.go","line":10,"column":6,"includeDeclaration":true}`},
		{"hover", `{"op":"hover","path":"main.go","line":12,"column":21}`},
		{"workspaceSymbol", `{"op":"workspaceSymbol","query":"Square"}`},
		{"diagnostics", `{"op":"diagnostics","path":"broken/broken.go"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if _, err := e.c.Serve(ctx, call, []byte(bc.req)); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := e.c.Serve(ctx, call, []byte(bc.req)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
