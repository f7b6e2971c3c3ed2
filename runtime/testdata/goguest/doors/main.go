// Command doors is a test fixture for the one door into module code: each
// of its tools serves a resource, a resource template and a prompt (with
// completions) that run as that tool, and everything it runs (a call, a
// read, a get, a completion) first writes a file out/<tool>-<what>
// through the fs capability, so that a test can tell, byte for byte,
// whether module code ran with the tool's grants.
package main

import (
	"encoding/json"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func main() {}

// names are the tools; a test's config hides, blocks, gates or scopes
// them by name.
var names = []string{"open", "hidden", "blocked", "scoped", "fixed", "confirmed"}

// trace writes out/<tool>-<what>: the proof that code ran as tool.
func trace(ctx *warden.Context, name, what string) error {
	var reply json.RawMessage
	return warden.Host(ctx, "fs", map[string]string{"op": "write", "path": "out/" + name + "-" + what, "content": what}, &reply)
}

type doorTool struct{ name string }

func (d doorTool) Descriptor() tool.Descriptor {
	return tool.Descriptor{Name: d.name, Description: "fixture: writes out/" + d.name + "-call", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (d doorTool) Call(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
	if err := trace(ctx, d.name, "call"); err != nil {
		return nil, err
	}
	return warden.Text("ran " + d.name), nil
}

func init() {
	for _, name := range names {
		warden.Register(doorTool{name})
		warden.RegisterResources(warden.ResourceFunc{
			Desc: tool.ResourceDescriptor{URI: "doors://" + name + "/resource", Name: name + "-resource", Tool: name},
			ReadFunc: func(ctx *warden.Context, uri string) (*tool.ResourceResult, error) {
				if err := trace(ctx, name, "resource"); err != nil {
					return nil, err
				}
				return warden.TextResource(uri, "text/plain", "read as "+name), nil
			},
		})
		warden.RegisterTemplates(warden.TemplateFunc{
			Desc: tool.ResourceTemplateDescriptor{URITemplate: "doors://" + name + "/item/{id}", Name: name + "-item", Tool: name},
			ReadFunc: func(ctx *warden.Context, uri string, vars map[string]string) (*tool.ResourceResult, error) {
				if err := trace(ctx, name, "template"); err != nil {
					return nil, err
				}
				return warden.TextResource(uri, "text/plain", "item "+vars["id"]+" as "+name), nil
			},
			CompleteFunc: func(ctx *warden.Context, argument, value string, _ map[string]string) (*tool.Completion, error) {
				if err := trace(ctx, name, "complete-template"); err != nil {
					return nil, err
				}
				return warden.Completions(value + "1"), nil
			},
		})
		warden.RegisterPrompts(warden.PromptFunc{
			Desc: tool.PromptDescriptor{Name: name + "_prompt", Description: "fixture", Tool: name,
				Arguments: []tool.PromptArgument{{Name: "a"}}},
			GetFunc: func(ctx *warden.Context, args map[string]string) (*tool.PromptResult, error) {
				if err := trace(ctx, name, "prompt"); err != nil {
					return nil, err
				}
				return warden.Messages(warden.User(warden.TextBlock("prompt as " + name))), nil
			},
			CompleteFunc: func(ctx *warden.Context, argument, value string, _ map[string]string) (*tool.Completion, error) {
				if err := trace(ctx, name, "complete-prompt"); err != nil {
					return nil, err
				}
				return warden.Completions(value + "2"), nil
			},
		})
	}
	// A resource that runs as no tool: with no grants, its write is refused.
	warden.RegisterResources(warden.ResourceFunc{
		Desc: tool.ResourceDescriptor{URI: "doors://nobody", Name: "nobody"},
		ReadFunc: func(ctx *warden.Context, uri string) (*tool.ResourceResult, error) {
			if err := trace(ctx, "nobody", "resource"); err != nil {
				return warden.TextResource(uri, "text/plain", "refused: "+err.Error()), nil
			}
			return warden.TextResource(uri, "text/plain", "wrote"), nil
		},
	})
}
