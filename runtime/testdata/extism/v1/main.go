// Command v1 is an Extism plugin of the hyper-mcp v1 / mcp.run shape, built
// with the Extism Go PDK and the standard toolchain, for the runtime's
// Extism tests. "describe" lists the tools; "call" takes
// {"params":{"name","arguments"}} and returns {"content":[...],"isError"?}.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"github.com/extism/go-pdk"
)

func main() {}

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

var tools = []tool{
	{"v1_add", "Adds a and b.", json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
	{"v1_fail", "Fails in the way named by how: error_set, rc, is_error.", json.RawMessage(`{"type":"object","properties":{"how":{"type":"string"}}}`)},
	{"v1_trap", "Traps with an out-of-bounds load.", json.RawMessage(`{"type":"object"}`)},
	{"v1_loop", "Never returns.", json.RawMessage(`{"type":"object"}`)},
	{"v1_fetch", "GETs url and returns status and body.", json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`)},
	{"v1_file", "Reads (or with content, writes) path through WASI.", json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"},"list":{"type":"boolean"}},"required":["path"]}`)},
	{"v1_config", "Returns the config value of key.", json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}`)},
	{"v1_notify", "Reports progress three times and logs.", json.RawMessage(`{"type":"object"}`)},
	{"v1_state", "Counts its calls in a global and a var.", json.RawMessage(`{"type":"object"}`)},
	{"v1_grow", "Allocates mb MiB.", json.RawMessage(`{"type":"object","properties":{"mb":{"type":"integer"}}}`)},
}

//go:wasmexport describe
func describe() int32 {
	if err := pdk.OutputJSON(map[string]any{"tools": tools}); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

type request struct {
	Params struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	} `json:"params"`
}

type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type result struct {
	Content []content `json:"content"`
	IsError bool      `json:"isError,omitempty"`
}

func text(format string, args ...any) result {
	return result{Content: []content{{Type: "text", Text: fmt.Sprintf(format, args...)}}}
}

var calls int

//go:wasmexport call
func call() int32 {
	var req request
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetError(err)
		return 1
	}
	args := req.Params.Arguments
	str := func(k string) string { s, _ := args[k].(string); return s }
	var res result
	switch req.Params.Name {
	case "v1_add":
		a, _ := args["a"].(float64)
		b, _ := args["b"].(float64)
		res = text("%g", a+b)
	case "v1_fail":
		switch str("how") {
		case "error_set":
			pdk.SetErrorString("plugin failed on purpose")
			return 1
		case "rc":
			return 7
		default:
			res = text("tool-level failure")
			res.IsError = true
		}
	case "v1_trap":
		p := (*uint64)(unsafe.Pointer(uintptr(0xFFFFFFF0)))
		res = text("%d", *p)
	case "v1_loop":
		for i := 0; ; i++ {
			calls += i & 1
		}
	case "v1_fetch":
		resp := pdk.NewHTTPRequest(pdk.MethodGet, str("url")).Send()
		res = text("%d %s %s", resp.Status(), resp.Headers()["x-fixture"], resp.Body())
	case "v1_file":
		switch {
		case args["list"] == true:
			entries, err := os.ReadDir(str("path"))
			if err != nil {
				pdk.SetError(err)
				return 1
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			res = text("%s", strings.Join(names, ","))
		case args["content"] != nil:
			if err := os.WriteFile(str("path"), []byte(str("content")), 0o644); err != nil {
				pdk.SetError(err)
				return 1
			}
			res = text("wrote %d", len(str("content")))
		default:
			b, err := os.ReadFile(str("path"))
			if err != nil {
				pdk.SetError(err)
				return 1
			}
			res = text("%s", b)
		}
	case "v1_config":
		v, ok := pdk.GetConfig(str("key"))
		if !ok && args["require"] == true {
			// As plugins do with a setting they cannot work without.
			panic("missing required configuration: " + str("key"))
		}
		res = text("%v %s", ok, v)
	case "v1_notify":
		pdk.Log(pdk.LogInfo, "pdk log line")
		for i := 1; i <= 3; i++ {
			notifyProgress(fmt.Sprintf(`{"progressToken":"t","progress":%d,"total":3,"message":"step %d"}`, i, i))
		}
		notifyLog(`{"level":"warning","logger":"fixture","data":"careful"}`)
		notifyLog(`{"level":"info","data":{"k":1}}`)
		res = text("notified")
	case "v1_state":
		calls++
		n := pdk.GetVarInt("n") + 1
		pdk.SetVarInt("n", n)
		res = text("global=%d var=%d", calls, n)
	case "v1_grow":
		mb, _ := args["mb"].(float64)
		hog = make([]byte, int(mb)<<20)
		for i := range hog {
			hog[i] = 1
		}
		res = text("grew %d", len(hog))
	default:
		res = text("unknown tool %s", req.Params.Name)
		res.IsError = true
	}
	if err := pdk.OutputJSON(res); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

var hog []byte

func notifyProgress(s string) {
	mem := pdk.AllocateString(s)
	defer mem.Free()
	_notifyProgress(mem.Offset())
}

func notifyLog(s string) {
	mem := pdk.AllocateString(s)
	defer mem.Free()
	_notifyLoggingMessage(mem.Offset())
}

//go:wasmimport extism:host/user notify_progress
func _notifyProgress(uint64)

//go:wasmimport extism:host/user notify_logging_message
func _notifyLoggingMessage(uint64)
