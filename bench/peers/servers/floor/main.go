// Command floor is the transport's floor of the peers benchmark: a
// bufio + encoding/json loop that answers initialize and tools/call echo on
// stdin/stdout, newline-delimited, with the result shape of an MCP server
// and nothing else (no schema validation, no sessions, no dispatch tables).
// What a server costs beyond it is the cost of being an MCP server.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string `json:"name"`
		Arguments struct {
			Text string `json:"text"`
		} `json:"arguments"`
	} `json:"params"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type text struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type callResult struct {
	Content           []text `json:"content"`
	StructuredContent any    `json:"structuredContent"`
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		var req request
		if err := json.Unmarshal(line, &req); err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			return
		}
		if req.ID == nil {
			continue // a notification
		}
		resp := response{JSONRPC: "2.0", ID: req.ID}
		switch {
		case req.Method == "initialize":
			resp.Result = map[string]any{
				"protocolVersion": "2025-06-18",
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "floor", "version": "1"},
			}
		case req.Method == "tools/call" && req.Params.Name == "echo":
			a := req.Params.Arguments
			resp.Result = callResult{Content: []text{{"text", a.Text}}, StructuredContent: a}
		default:
			resp.Error = &rpcError{-32601, "method not found: " + req.Method}
		}
		if err := enc.Encode(resp); err != nil || out.Flush() != nil {
			return
		}
	}
}
