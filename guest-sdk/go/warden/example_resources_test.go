package warden_test

import (
	"fmt"
	"strings"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

// A module serving a resource template and a prompt with completions. In a
// real module the Add calls are warden.RegisterTemplates and
// warden.RegisterPrompts in init; the host then calls the
// warden_read_resource, warden_get_prompt and warden_complete exports,
// which this example drives through the registry directly.
func ExampleRegistry_AddPrompts() {
	cities := []string{"paris", "parma", "prague"}
	r := warden.NewRegistry()
	r.AddTemplates(warden.TemplateFunc{
		Desc: tool.ResourceTemplateDescriptor{URITemplate: "weather://{city}", Name: "weather", MimeType: "text/plain"},
		ReadFunc: func(_ *warden.Context, uri string, vars map[string]string) (*tool.ResourceResult, error) {
			return warden.TextResource(uri, "text/plain", "sunny in "+vars["city"]), nil
		},
	})
	r.AddPrompts(warden.PromptFunc{
		Desc: tool.PromptDescriptor{Name: "trip", Description: "Plans a trip.",
			Arguments: []tool.PromptArgument{{Name: "city", Required: true}}},
		GetFunc: func(_ *warden.Context, args map[string]string) (*tool.PromptResult, error) {
			return warden.Messages(
				warden.User(warden.EmbeddedTextBlock("weather://"+args["city"], "text/plain", "sunny")),
				warden.User(warden.TextBlock("Plan a day in "+args["city"]+".")),
			), nil
		},
		CompleteFunc: func(_ *warden.Context, argument, value string, _ map[string]string) (*tool.Completion, error) {
			var match []string
			for _, c := range cities {
				if strings.HasPrefix(c, value) {
					match = append(match, c)
				}
			}
			return warden.Completions(match...), nil
		},
	})
	fmt.Println(string(r.ReadResource([]byte(`{"uri":"weather://oslo"}`), nil)))
	fmt.Println(string(r.GetPrompt([]byte(`{"name":"trip","arguments":{"city":"oslo"}}`), nil)))
	fmt.Println(string(r.Complete([]byte(`{"ref":{"type":"ref/prompt","name":"trip"},"argument":{"name":"city","value":"par"}}`), nil)))
	// Output:
	// {"contents":[{"uri":"weather://oslo","mimeType":"text/plain","text":"sunny in oslo"}]}
	// {"messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"weather://oslo","mimeType":"text/plain","text":"sunny"}}},{"role":"user","content":{"type":"text","text":"Plan a day in oslo."}}]}
	// {"completion":{"values":["paris","parma"],"total":2}}
}
