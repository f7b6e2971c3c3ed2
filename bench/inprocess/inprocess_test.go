// Package inprocess measures warden's whole call path in one process: config,
// app, the sandboxed echo module and mcpserver, against a native go-sdk
// server, over in-memory transports, so that a CPU or allocation profile
// shows warden's own code and not the pipes.
//
//	go test ./bench/inprocess -run '^$' -bench . -cpuprofile cpu.prof -memprofile mem.prof
//
// It is a package of its own so that bench's native server, a child
// process of bench's test binary, is not linked with warden: every package
// linked in (init-time heap, larger GC roots) made that baseline up to
// twice as slow per call.
package inprocess

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/mcpserver"
)

type echoArgs struct {
	Text string `json:"text"`
}

// nativeServer is bench's baseline: the echo tool in plain Go on the go-sdk.
func nativeServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "native", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{
		Name:         "echo",
		Description:  "Returns the given text unchanged.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	}, func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, echoArgs, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, a, nil
	})
	return s
}

// BenchmarkInProcess is bench's BenchmarkEcho stdio row without the processes:
// the whole warden stack (config, app, sandboxed echo module, mcpserver)
// and the native go-sdk server, each over in-memory transports in this
// process, so that a CPU or allocation profile of it (-cpuprofile,
// -memprofile) shows warden's own call path and nothing else.
func BenchmarkInProcess(b *testing.B) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	echo := testwasm.BuildGoFile(b, "../../tools-wasm/echo")
	dir := b.TempDir()
	tools := filepath.Join(dir, "tools")
	os.MkdirAll(tools, 0o755)
	wasm, err := os.ReadFile(echo)
	if err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(tools, "echo.wasm"), wasm, 0o644)
	cfgPath := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfgPath, []byte("tools:\n  dir: tools\n  cache_dir: cache\n  grants: {echo: {}}\nlog: {level: warn}\n"), 0o644)

	serve := map[string]func(ctx context.Context, t mcp.Transport){
		"native": func(ctx context.Context, t mcp.Transport) { nativeServer().Run(ctx, t) },
		"warden": func(ctx context.Context, t mcp.Transport) {
			cfg, err := config.Load(cfgPath)
			if err != nil {
				b.Error(err)
				return
			}
			a, err := app.New(ctx, cfg, quiet)
			if err != nil {
				b.Error(err)
				return
			}
			defer a.Close(context.Background())
			for _, err := range a.LoadTools(ctx) {
				b.Error(err)
			}
			s := mcpserver.New(a, mcpserver.Options{Logger: quiet, MaxInFlight: 32, PageSize: 100})
			defer s.Close()
			s.Serve(ctx, t)
		},
	}
	for _, name := range []string{"native", "warden"} {
		b.Run(name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st, ct := mcp.NewInMemoryTransports()
			go serve[name](ctx, st)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "echo", Arguments: echoArgs{"hello, warden"}}
			if _, err := cs.CallTool(ctx, params); err != nil { // warm: the first call compiles and instantiates
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := cs.CallTool(ctx, params)
				if err != nil || res.IsError {
					b.Fatalf("%+v %v", res, err)
				}
			}
		})
	}
}
