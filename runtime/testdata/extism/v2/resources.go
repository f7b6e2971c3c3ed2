package main

// Resources, templates, prompts and completion in hyper-mcp v2's shape.

import (
	"encoding/base64"
	"strings"

	"github.com/extism/go-pdk"
)

func output(v any) int32 {
	if err := pdk.OutputJSON(v); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

//go:wasmexport list_resources
func listResources() int32 {
	return output(map[string]any{"resources": []map[string]any{
		{"uri": "v2://note", "name": "note", "mimeType": "text/plain", "description": "a note"},
		{"uri": "v2://pixel", "name": "pixel", "mimeType": "image/png"},
		{"uri": "v2://bad", "name": "bad"},
	}})
}

//go:wasmexport list_resource_templates
func listResourceTemplates() int32 {
	return output(map[string]any{"resourceTemplates": []map[string]any{
		{"uriTemplate": "v2://city/{name}", "name": "city", "mimeType": "text/plain"},
	}})
}

//go:wasmexport list_prompts
func listPrompts() int32 {
	return output(map[string]any{"prompts": []map[string]any{
		{"name": "v2_prompt", "description": "says hi", "arguments": []map[string]any{{"name": "who", "required": true}}},
	}})
}

//go:wasmexport read_resource
func readResource() int32 {
	var in struct {
		Request struct {
			URI string `json:"uri"`
		} `json:"request"`
	}
	if err := pdk.InputJSON(&in); err != nil {
		pdk.SetError(err)
		return 1
	}
	uri := in.Request.URI
	switch {
	case uri == "v2://note":
		return output(map[string]any{"contents": []map[string]any{{"uri": uri, "mimeType": "text/plain", "text": "a note"}}})
	case uri == "v2://pixel":
		return output(map[string]any{"contents": []map[string]any{{"uri": uri, "mimeType": "image/png", "blob": base64.StdEncoding.EncodeToString([]byte{1, 2, 3})}}})
	case strings.HasPrefix(uri, "v2://city/"):
		return output(map[string]any{"contents": []map[string]any{{"uri": uri, "text": "city " + strings.TrimPrefix(uri, "v2://city/")}}})
	case uri == "v2://bad":
		pdk.OutputString(`{"contents": "no"}`)
		return 0
	}
	pdk.SetErrorString("no such resource " + uri)
	return 1
}

//go:wasmexport get_prompt
func getPrompt() int32 {
	var in struct {
		Request struct {
			Name      string            `json:"name"`
			Arguments map[string]string `json:"arguments"`
		} `json:"request"`
	}
	if err := pdk.InputJSON(&in); err != nil {
		pdk.SetError(err)
		return 1
	}
	return output(map[string]any{"messages": []map[string]any{
		{"role": "user", "content": map[string]any{"type": "text", "text": "hi " + in.Request.Arguments["who"]}},
	}})
}

//go:wasmexport complete
func complete() int32 {
	var in struct {
		Request struct {
			Ref struct {
				Type string `json:"type"`
			} `json:"ref"`
			Argument struct {
				Value string `json:"value"`
			} `json:"argument"`
		} `json:"request"`
	}
	if err := pdk.InputJSON(&in); err != nil {
		pdk.SetError(err)
		return 1
	}
	return output(map[string]any{"completion": map[string]any{"values": []string{in.Request.Ref.Type + ":" + in.Request.Argument.Value}}})
}
