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
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/bench/internal/echoserver"
	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/mcpserver"
)

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

	serveWarden := func(ctx context.Context, t mcp.Transport) {
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
		for _, err := range a.Catalog().LoadTools(ctx) {
			b.Error(err)
		}
		s := mcpserver.New(a, a.ServerOptions(mcpserver.Options{Logger: quiet, MaxInFlight: 32, PageSize: 100}))
		defer s.Close()
		s.Serve(ctx, t)
	}
	serve := map[string]func(ctx context.Context, t mcp.Transport){
		"native": func(ctx context.Context, t mcp.Transport) { echoserver.Native().Run(ctx, t) },
		"warden": serveWarden,
	}
	echoserver.CompareInMemory(b, []string{"native", "warden"}, serve)

	// The stdio row's transports: warden reads through its guard (what
	// `warden serve` runs on stdio), the native server through the
	// go-sdk's IOTransport, both over an in-memory byte stream.
	stdio := map[string]func(ctx context.Context, conn net.Conn){
		"native-stdio": func(ctx context.Context, conn net.Conn) {
			echoserver.Native().Run(ctx, &mcp.IOTransport{Reader: conn, Writer: conn})
		},
		"warden-stdio": func(ctx context.Context, conn net.Conn) {
			serveWarden(ctx, &mcpserver.GuardedTransport{Reader: conn, Writer: conn, Logger: quiet})
		},
	}
	echoserver.ComparePipes(b, []string{"native-stdio", "warden-stdio"}, stdio)
}
