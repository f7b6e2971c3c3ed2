// Command resources is a runtime test fixture: a module whose resources,
// prompts and completions misbehave in every way the host must survive.
package main

import (
	"encoding/json"
	"strings"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func main() {}

type memtool struct{}

func (memtool) Descriptor() tool.Descriptor {
	return tool.Descriptor{Name: "memtool", Description: "fixture", InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (memtool) Call(*warden.Context, json.RawMessage) (*tool.Result, error) {
	return warden.Text("ok"), nil
}

func recurse(n int) int {
	var pad [64]byte
	pad[n%64] = byte(n)
	return recurse(n+1) + int(pad[0])
}

func res(uri string, read func(ctx *warden.Context, uri string) (*tool.ResourceResult, error)) warden.Resource {
	return warden.ResourceFunc{Desc: tool.ResourceDescriptor{URI: uri, Name: strings.TrimPrefix(uri, "fx://"), Tool: "memtool"}, ReadFunc: read}
}

func init() {
	warden.Register(memtool{})
	warden.RegisterResources(
		res("fx://ok", func(_ *warden.Context, uri string) (*tool.ResourceResult, error) {
			return warden.TextResource(uri, "text/plain", "fine"), nil
		}),
		res("fx://both", func(_ *warden.Context, uri string) (*tool.ResourceResult, error) {
			r := warden.TextResource(uri, "text/plain", "t")
			blob := "AAAA"
			r.Contents[0].Blob = &blob
			return r, nil
		}),
		res("fx://badblob", func(_ *warden.Context, uri string) (*tool.ResourceResult, error) {
			blob := "not base64!"
			return &tool.ResourceResult{Contents: []tool.ResourceContents{{URI: uri, Blob: &blob}}}, nil
		}),
		res("fx://empty", func(_ *warden.Context, uri string) (*tool.ResourceResult, error) {
			return &tool.ResourceResult{}, nil
		}),
		res("fx://huge", func(_ *warden.Context, uri string) (*tool.ResourceResult, error) {
			return warden.TextResource(uri, "text/plain", strings.Repeat("x", 2<<20)), nil
		}),
		res("fx://trap", func(_ *warden.Context, uri string) (*tool.ResourceResult, error) {
			recurse(0)
			return nil, nil
		}),
		res("fx://loop", func(_ *warden.Context, uri string) (*tool.ResourceResult, error) {
			for {
			}
		}),
		// Speaks for a resource of another module (the conformance
		// module's), then for one of its own beside the one read.
		res("fx://impostor", func(_ *warden.Context, uri string) (*tool.ResourceResult, error) {
			return warden.TextResource("test://static-text", "text/plain", "forged"), nil
		}),
		res("fx://siblings", func(_ *warden.Context, uri string) (*tool.ResourceResult, error) {
			r := warden.TextResource(uri, "text/plain", "self")
			r.Contents = append(r.Contents, warden.TextResource("fx://ok", "text/plain", "fine").Contents[0],
				warden.TextResource("fx://item/9", "text/plain", "item 9").Contents[0])
			return r, nil
		}),
		res("fx://kind", func(_ *warden.Context, uri string) (*tool.ResourceResult, error) {
			return nil, warden.NotFound("nothing at %s", uri)
		}),
		res("fx://memory", func(ctx *warden.Context, uri string) (*tool.ResourceResult, error) {
			var reply struct {
				Value string `json:"value"`
			}
			if err := warden.Host(ctx, "memory", map[string]string{"op": "get", "topic": "notes"}, &reply); err != nil {
				return nil, err
			}
			return warden.TextResource(uri, "text/markdown", reply.Value), nil
		}),
	)
	warden.RegisterTemplates(warden.TemplateFunc{
		Desc: tool.ResourceTemplateDescriptor{URITemplate: "fx://item/{id}", Name: "item"},
		ReadFunc: func(_ *warden.Context, uri string, vars map[string]string) (*tool.ResourceResult, error) {
			return warden.TextResource(uri, "text/plain", "item "+vars["id"]), nil
		},
		CompleteFunc: func(_ *warden.Context, argument, value string, _ map[string]string) (*tool.Completion, error) {
			return warden.Completions(value+"1", value+"2"), nil
		},
	})
	warden.RegisterPrompts(
		warden.PromptFunc{
			Desc: tool.PromptDescriptor{Name: "greet", Description: "fixture",
				Arguments: []tool.PromptArgument{{Name: "who", Required: true}, {Name: "tone"}}},
			GetFunc: func(_ *warden.Context, args map[string]string) (*tool.PromptResult, error) {
				return warden.Messages(warden.User(warden.TextBlock("hello " + args["who"]))), nil
			},
			CompleteFunc: func(_ *warden.Context, argument, value string, _ map[string]string) (*tool.Completion, error) {
				if argument == "tone" {
					c := &tool.Completion{}
					for range 101 {
						c.Values = append(c.Values, "x")
					}
					return c, nil
				}
				return warden.Completions("world", "warden"), nil
			},
		},
		warden.PromptFunc{
			Desc: tool.PromptDescriptor{Name: "badrole", Description: "fixture"},
			GetFunc: func(*warden.Context, map[string]string) (*tool.PromptResult, error) {
				return &tool.PromptResult{Messages: []tool.PromptMessage{{Role: "system", Content: tool.TextContent("x")}}}, nil
			},
		},
		warden.PromptFunc{
			Desc: tool.PromptDescriptor{Name: "panics", Description: "fixture"},
			GetFunc: func(*warden.Context, map[string]string) (*tool.PromptResult, error) {
				panic("prompt fixture panic")
			},
		},
	)
}
