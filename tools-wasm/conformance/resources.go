package main

// The resources, resource templates, prompts and completion the suite's
// resources-*, prompts-* and completion-complete scenarios read, with the
// URIs, names and texts of its reference server.

import (
	"fmt"
	"strings"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() {
	warden.RegisterResources(
		warden.ResourceFunc{
			Desc: tool.ResourceDescriptor{URI: "test://static-text", Name: "static-text", MimeType: "text/plain",
				Description: "A static text resource for testing"},
			ReadFunc: func(_ *warden.Context, uri string) (*tool.ResourceResult, error) {
				return warden.TextResource(uri, "text/plain", "This is the content of the static text resource."), nil
			},
		},
		warden.ResourceFunc{
			Desc: tool.ResourceDescriptor{URI: "test://static-binary", Name: "static-binary", MimeType: "image/png",
				Description: "A static binary resource (image) for testing"},
			ReadFunc: func(_ *warden.Context, uri string) (*tool.ResourceResult, error) {
				return warden.BlobResource(uri, "image/png", mustDecode(pngBase64)), nil
			},
		},
		warden.ResourceFunc{
			Desc: tool.ResourceDescriptor{URI: "test://watched-resource", Name: "watched-resource", MimeType: "text/plain",
				Description: "A resource that can be subscribed to"},
			ReadFunc: func(_ *warden.Context, uri string) (*tool.ResourceResult, error) {
				return warden.TextResource(uri, "text/plain", "Watched resource content"), nil
			},
		},
	)
	warden.RegisterTemplates(warden.TemplateFunc{
		Desc: tool.ResourceTemplateDescriptor{URITemplate: "test://template/{id}/data", Name: "template",
			MimeType: "application/json", Description: "A resource template with parameter substitution"},
		ReadFunc: func(_ *warden.Context, uri string, vars map[string]string) (*tool.ResourceResult, error) {
			id := vars["id"]
			text := fmt.Sprintf(`{"id":%q,"templateTest":true,"data":%q}`, id, "Data for ID: "+id)
			return warden.TextResource(uri, "application/json", text), nil
		},
	})
	warden.RegisterPrompts(
		warden.PromptFunc{
			// Runs under the grants of test_input_required_result_elicitation,
			// which may ask the person.
			Desc: tool.PromptDescriptor{Name: "test_input_required_result_prompt", Tool: "test_input_required_result_elicitation",
				Description: "A prompt that asks the person for context first (SEP-2322 input-required result)"},
			GetFunc: func(ctx *warden.Context, _ map[string]string) (*tool.PromptResult, error) {
				res, err := warden.Elicit(ctx, warden.ElicitRequest{Key: "user_context", Message: "What context should the prompt use?",
					RequestedSchema: nameSchema("context")})
				if err != nil {
					return nil, err
				}
				return warden.Messages(warden.User(warden.TextBlock(fmt.Sprintf("Use this context: %v", res.Content["context"])))), nil
			},
		},
		warden.PromptFunc{
			Desc: tool.PromptDescriptor{Name: "test_simple_prompt", Description: "A simple prompt without arguments"},
			GetFunc: func(*warden.Context, map[string]string) (*tool.PromptResult, error) {
				return warden.Messages(warden.User(warden.TextBlock("This is a simple prompt for testing."))), nil
			},
		},
		warden.PromptFunc{
			Desc: tool.PromptDescriptor{Name: "test_prompt_with_arguments", Description: "A prompt with required arguments",
				Arguments: []tool.PromptArgument{
					{Name: "arg1", Description: "First test argument", Required: true},
					{Name: "arg2", Description: "Second test argument", Required: true},
				}},
			GetFunc: func(_ *warden.Context, args map[string]string) (*tool.PromptResult, error) {
				text := fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", args["arg1"], args["arg2"])
				return warden.Messages(warden.User(warden.TextBlock(text))), nil
			},
			CompleteFunc: func(_ *warden.Context, argument, value string, _ map[string]string) (*tool.Completion, error) {
				var values []string
				if argument == "arg1" {
					for _, v := range []string{"paris", "park", "party", "test", "testValue1"} {
						if strings.HasPrefix(v, value) {
							values = append(values, v)
						}
					}
				}
				return warden.Completions(values...), nil
			},
		},
		warden.PromptFunc{
			Desc: tool.PromptDescriptor{Name: "test_prompt_with_embedded_resource", Description: "A prompt that includes an embedded resource",
				Arguments: []tool.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
			GetFunc: func(_ *warden.Context, args map[string]string) (*tool.PromptResult, error) {
				return warden.Messages(
					warden.User(warden.EmbeddedTextBlock(args["resourceUri"], "text/plain", "Embedded resource content for testing.")),
					warden.User(warden.TextBlock("Please process the embedded resource above.")),
				), nil
			},
		},
		warden.PromptFunc{
			Desc: tool.PromptDescriptor{Name: "test_prompt_with_image", Description: "A prompt that includes image content"},
			GetFunc: func(*warden.Context, map[string]string) (*tool.PromptResult, error) {
				return warden.Messages(
					warden.User(warden.ImageBlock(mustDecode(pngBase64), "image/png")),
					warden.User(warden.TextBlock("Please analyze the image above.")),
				), nil
			},
		},
	)
}
