package e2e

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/mcpserver"
)

// BenchmarkLSPColdQuery measures a tool's first query on a fresh warden:
// starting gopls, initializing it over the project, loading the package
// and answering, through the whole tool path (wasm guest, warden.lsp,
// fs gate). Loading the app and its modules is not timed.
func BenchmarkLSPColdQuery(b *testing.B) {
	goplsPath(b)
	e := newEnv(b, grantsYAML())
	e.app.Close(context.Background())
	args := json.RawMessage(`{"path":"shapes/shapes.go"}`)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		cfg, err := config.Load(e.config)
		if err != nil {
			b.Fatal(err)
		}
		a, err := app.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			b.Fatal(err)
		}
		if errs := a.Catalog().LoadTools(ctx); len(errs) > 0 {
			b.Fatal(errs)
		}
		b.StartTimer()
		res, err := a.Call(ctx, mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "symbols", Arguments: args, Observer: nopObserver{}})
		b.StopTimer()
		if err != nil || res.IsError {
			b.Fatalf("symbols: %v %v", err, res.Error)
		}
		a.Close(ctx)
		b.StartTimer()
	}
}

// BenchmarkLSPWarmQuery measures one call of each tool against a running
// gopls, through the whole tool path.
func BenchmarkLSPWarmQuery(b *testing.B) {
	goplsPath(b)
	e := newEnv(b, grantsYAML())
	hot, _ := findPos(b, e.project, "many/many.go", "func Hot", 1)
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"symbols", map[string]any{"path": "shapes/shapes.go"}},
		{"definition", map[string]any{"path": "main.go", "line": 12, "name": "Total"}},
		{"references", map[string]any{"path": "shapes/shapes.go", "line": 10, "column": 6}},
		{"hover", map[string]any{"path": "main.go", "line": 12, "name": "Total"}},
		{"workspace_symbols", map[string]any{"query": "Square"}},
		// 100 of 130 references, each with its line of source.
		{"references_130", map[string]any{"path": "many/many.go", "line": hot, "name": "Hot"}},
	} {
		tool := c.name
		if tool == "references_130" {
			tool = "references"
		}
		raw, _ := json.Marshal(c.args)
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			call := mcpserver.Call{Pass: mcpserver.LocalPass(), Name: tool, Arguments: raw, Observer: nopObserver{}}
			if res, err := e.app.Call(ctx, call); err != nil || res.IsError { // warm up
				b.Fatalf("%s: %v %v", c.name, err, res.Error)
			}
			for b.Loop() {
				if res, err := e.app.Call(ctx, call); err != nil || res.IsError {
					b.Fatalf("%s: %v %v", c.name, err, res.Error)
				}
			}
		})
	}
}
