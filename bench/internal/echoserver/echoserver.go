// Package echoserver is what the benchmarks share: the baseline (the echo
// tool in plain Go on a go-sdk server, with the same schemas and result as
// tools-wasm/echo) and a loop that calls echo over in-memory transports.
// It imports nothing of warden, so the native server child of bench stays
// a plain go-sdk server.
package echoserver

import (
	"context"
	"encoding/json"
	"net"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Args are echo's arguments.
type Args struct {
	Text string `json:"text"`
}

// Native is the baseline server.
func Native() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "native", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{
		Name:         "echo",
		Description:  "Returns the given text unchanged.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	}, func(_ context.Context, _ *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, Args, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, a, nil
	})
	return s
}

// CompareInMemory runs one sub-benchmark per name, in order: serve[name]
// serves over an in-memory transport, and the go-sdk client calls echo
// b.N times after one warm-up call (which may compile and instantiate).
func CompareInMemory(b *testing.B, names []string, serve map[string]func(context.Context, mcp.Transport)) {
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st, ct := mcp.NewInMemoryTransports()
			go serve[name](ctx, st)
			callLoop(b, ctx, ct)
		})
	}
}

// ComparePipes is CompareInMemory with the server given the raw byte
// stream (newline-delimited JSON-RPC, as on stdio) instead of a transport,
// so that it can serve it with a transport of its own; the client speaks
// the go-sdk's IOTransport, as over a child's stdin and stdout.
func ComparePipes(b *testing.B, names []string, serve map[string]func(context.Context, net.Conn)) {
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			server, client := net.Pipe()
			go serve[name](ctx, server)
			callLoop(b, ctx, &mcp.IOTransport{Reader: client, Writer: client})
		})
	}
}

// callLoop connects a go-sdk client over ct and calls echo b.N times after
// one warm-up call.
func callLoop(b *testing.B, ctx context.Context, ct mcp.Transport) {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "echo", Arguments: Args{Text: "hello, warden"}}
	if _, err := cs.CallTool(ctx, params); err != nil {
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
}
