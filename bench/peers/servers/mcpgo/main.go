// Command mcpgo is mark3labs/mcp-go's echo server of the peers benchmark:
// the echo tool of tools-wasm/echo (same input schema and result) served
// over stdio the way mcp-go's examples do.
package main

import (
	"context"
	"log"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	s := server.NewMCPServer("mcpgo", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo",
		mcp.WithDescription("Returns the given text unchanged."),
		mcp.WithString("text", mcp.Required()),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text, err := req.RequireString("text")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultStructured(map[string]string{"text": text}, text), nil
	})
	if err := server.ServeStdio(s); err != nil {
		log.Fatal(err)
	}
}
