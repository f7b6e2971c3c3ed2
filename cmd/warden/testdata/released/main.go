// Command released is the registry tests' third-party tool: a tool named
// "released" whose version, the hosts it requests (comma-separated) and
// its memory level and topics (comma-separated) are set at link time, so
// that one source yields a first release and an update that asks for more;
// extra, when set, names a second tool of the module, which requests nothing:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -ldflags "-X main.version=2.0.0 -X main.host=api.example.com" -o released.wasm
package main

import (
	"encoding/json"
	"strings"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

// version is the tool's version; host, when set, lists hosts it requests
// net access to; memory, when set, is the memory level it requests, over
// topics when set, else over the whole store.
var version, host, memory, topics, extra = "1.0.0", "", "", "", ""

func init() {
	warden.Register(released{})
	if extra != "" {
		warden.Register(extraTool{})
	}
}

// main is never called: the module is a reactor whose init registers the tool.
func main() {}

type released struct{}

func (released) Descriptor() tool.Descriptor {
	d := tool.Descriptor{
		Name:        "released",
		Description: "Says which release of it answers.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
		Version:     version,
	}
	if host != "" {
		d.Capabilities.Net = strings.Split(host, ",")
	}
	if memory != "" {
		d.Capabilities.Memory = tool.MemoryAccess(memory)
	}
	if topics != "" {
		d.Capabilities.MemoryTopics = strings.Split(topics, ",")
	}
	return d
}

func (released) Call(_ *warden.Context, _ json.RawMessage) (*tool.Result, error) {
	return warden.Text("release " + version), nil
}

// extraTool is the module's second tool when extra names it.
type extraTool struct{}

func (extraTool) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:        extra,
		Description: "A second tool of the release.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
		Version:     version,
	}
}

func (extraTool) Call(_ *warden.Context, _ json.RawMessage) (*tool.Result, error) {
	return warden.Text(extra + " of release " + version), nil
}
