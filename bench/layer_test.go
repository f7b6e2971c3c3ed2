package bench

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/bench/internal/echoserver"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// echoTools is an in-process Tools with the echo tool: no sandbox, so that
// BenchmarkLayer measures what the MCP layer itself adds.
type echoTools struct{}

func (echoTools) List() []tool.Descriptor {
	return []tool.Descriptor{{
		Name:         "echo",
		Description:  "Returns the given text unchanged.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	}}
}

func (echoTools) Call(_ context.Context, c mcpserver.Call) (*tool.Result, error) {
	var a echoArgs
	if err := json.Unmarshal(c.Arguments, &a); err != nil {
		return tool.ErrorResult(tool.Errorf(tool.KindInvalidArguments, "%v", err)), nil
	}
	return &tool.Result{Content: []tool.Content{tool.TextContent(a.Text)}, StructuredContent: c.Arguments}, nil
}

func (echoTools) Subscribe(func()) func() { return func() {} }

// BenchmarkLayer compares a tools/call through mcpserver (with an in-process
// echo) with the same call to a plain go-sdk server, both over an in-memory
// stdio-like transport: the difference is the MCP layer's own cost.
func BenchmarkLayer(b *testing.B) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	serve := map[string]func(ctx context.Context, t mcp.Transport){
		"native": func(ctx context.Context, t mcp.Transport) { nativeServer().Run(ctx, t) },
		"mcpserver": func(ctx context.Context, t mcp.Transport) {
			s := mcpserver.New(echoTools{}, mcpserver.Options{Logger: quiet})
			defer s.Close()
			s.Serve(ctx, t)
		},
	}
	echoserver.CompareInMemory(b, []string{"native", "mcpserver"}, serve)
}
