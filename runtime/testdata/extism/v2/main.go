// Command v2 is an Extism plugin of the hyper-mcp v2 shape, built with the
// Extism Go PDK and the standard toolchain, for the runtime's Extism
// tests: list_tools({"context"}) returns a ListToolsResult and
// call_tool({"request","context"}) a CallToolResult.
package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/extism/go-pdk"
)

func main() {}

type toolDef struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

//go:wasmexport list_tools
func listTools() int32 {
	var in struct {
		Context struct {
			ID any `json:"id"`
		} `json:"context"`
	}
	if err := pdk.InputJSON(&in); err != nil || in.Context.ID == nil {
		pdk.SetErrorString(fmt.Sprintf("list_tools: want a context with an id, got %q", pdk.Input()))
		return 1
	}
	tools := []toolDef{
		{Name: "v2_upper", Description: "Upper-cases text.",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"upper":{"type":"string"}},"required":["upper"]}`)},
		// v2_echo is tools-wasm/echo's logic, for the native-vs-Extism benchmark.
		{Name: "v2_echo", Description: "Returns the given text unchanged.",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"The text to return."}},"required":["text"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		{Name: "v2_error", Description: "Returns isError.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "v2_notify", Description: "Reports progress and logs.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "v2_fetch", Description: "POSTs body to url.", InputSchema: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"},"body":{"type":"string"}}}`)},
		{Name: "v2_panic", Description: "Panics.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "v2_context", Description: "Echoes the request context.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "v2_bad", Description: "Returns output that is not a CallToolResult.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	if err := pdk.OutputJSON(map[string]any{"tools": tools}); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

type callToolRequest struct {
	Request struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	} `json:"request"`
	Context json.RawMessage `json:"context"`
}

func textResult(s string) map[string]any {
	return map[string]any{"content": []map[string]any{{"type": "text", "text": s}}}
}

//go:wasmexport call_tool
func callTool() int32 {
	var req callToolRequest
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetError(err)
		return 1
	}
	args := req.Request.Arguments
	str := func(k string) string { s, _ := args[k].(string); return s }
	var res map[string]any
	switch req.Request.Name {
	case "v2_upper":
		up := strings.ToUpper(str("text"))
		res = textResult(up)
		res["structuredContent"] = map[string]any{"upper": up}
	case "v2_echo":
		res = textResult(str("text"))
		res["structuredContent"] = map[string]any{"text": str("text")}
	case "v2_error":
		res = textResult("no such thing")
		res["isError"] = true
	case "v2_notify":
		for i := 1; i <= 2; i++ {
			hostCall(_notifyProgress, fmt.Sprintf(`{"progressToken":1,"progress":%d}`, i*50))
		}
		hostCall(_notifyProgress, `{"progressToken":1,"progress":10}`) // not increasing: dropped
		hostCall(_notifyLoggingMessage, `{"level":"error","data":"v2 says hi"}`)
		res = textResult("ok")
	case "v2_fetch":
		r := pdk.NewHTTPRequest(pdk.MethodPost, str("url"))
		r.SetHeader("Content-Type", "text/plain")
		r.SetBody([]byte(str("body")))
		resp := r.Send()
		res = textResult(fmt.Sprintf("%d %s", resp.Status(), resp.Body()))
	case "v2_panic":
		panic("v2 fixture panic")
	case "v2_context":
		res = textResult(string(req.Context))
	case "v2_bad":
		pdk.OutputString("this is not JSON")
		return 0
	default:
		res = textResult("unknown tool")
		res["isError"] = true
	}
	if err := pdk.OutputJSON(res); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

func hostCall(f func(uint64), s string) {
	mem := pdk.AllocateString(s)
	defer mem.Free()
	f(mem.Offset())
}

//go:wasmimport extism:host/user notify_progress
func _notifyProgress(uint64)

//go:wasmimport extism:host/user notify_logging_message
func _notifyLoggingMessage(uint64)
