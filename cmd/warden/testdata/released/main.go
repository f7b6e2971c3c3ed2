// Command released is the registry tests' third-party tool: a tool named
// "released" whose version and the host it requests are set at link time,
// so that one source yields a first release and an update that asks for
// more:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -ldflags "-X main.version=2.0.0 -X main.host=api.example.com" -o released.wasm
package main

import (
	"encoding/json"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

// version is the tool's version; host, when set, is a host it requests
// net access to.
var version, host = "1.0.0", ""

func init() { warden.Register(released{}) }

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
		d.Capabilities.Net = []string{host}
	}
	return d
}

func (released) Call(_ *warden.Context, _ json.RawMessage) (*tool.Result, error) {
	return warden.Text("release " + version), nil
}
