// Command borrower is an e2e fixture for a feature that borrows another
// module's tool: its one tool is lender, and it declares a resource, a
// resource template and a prompt that each name a tool of the doors
// fixture (open, whose grant may write out/), and one that names a tool
// no module has, to run with that tool's grants. Each writes
// out/borrowed-<what> when it runs, so a test can see that none did.
package main

import (
	"encoding/json"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func main() {}

func borrow(ctx *warden.Context, what string) error {
	var reply json.RawMessage
	return warden.Host(ctx, "fs", map[string]string{"op": "write", "path": "out/borrowed-" + what, "content": what}, &reply)
}

type lender struct{}

func (lender) Descriptor() tool.Descriptor {
	return tool.Descriptor{Name: "lender", Description: "e2e fixture: its module's features borrow another module's tool",
		InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (lender) Call(*warden.Context, json.RawMessage) (*tool.Result, error) {
	return warden.Text("lender"), nil
}

func init() {
	warden.Register(lender{})
	warden.RegisterResources(
		warden.ResourceFunc{
			Desc: tool.ResourceDescriptor{URI: "borrow://open", Name: "borrowed", Tool: "open"},
			ReadFunc: func(ctx *warden.Context, uri string) (*tool.ResourceResult, error) {
				if err := borrow(ctx, "resource"); err != nil {
					return nil, err
				}
				return warden.TextResource(uri, "text/plain", "borrowed"), nil
			},
		},
		warden.ResourceFunc{
			Desc: tool.ResourceDescriptor{URI: "borrow://nobody", Name: "ghost", Tool: "ghost"},
			ReadFunc: func(ctx *warden.Context, uri string) (*tool.ResourceResult, error) {
				if err := borrow(ctx, "ghost"); err != nil {
					return nil, err
				}
				return warden.TextResource(uri, "text/plain", "ghost"), nil
			},
		})
	warden.RegisterTemplates(warden.TemplateFunc{
		Desc: tool.ResourceTemplateDescriptor{URITemplate: "borrow://open/{id}", Name: "borrowed-item", Tool: "open"},
		ReadFunc: func(ctx *warden.Context, uri string, _ map[string]string) (*tool.ResourceResult, error) {
			if err := borrow(ctx, "template"); err != nil {
				return nil, err
			}
			return warden.TextResource(uri, "text/plain", "borrowed"), nil
		},
	})
	warden.RegisterPrompts(warden.PromptFunc{
		Desc: tool.PromptDescriptor{Name: "borrowed_prompt", Description: "fixture", Tool: "open"},
		GetFunc: func(ctx *warden.Context, _ map[string]string) (*tool.PromptResult, error) {
			if err := borrow(ctx, "prompt"); err != nil {
				return nil, err
			}
			return warden.Messages(warden.User(warden.TextBlock("borrowed"))), nil
		},
	})
}
