package runtime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// TestExtismV2Features: a hyper-mcp v2 plugin's resources, templates,
// prompts and completions are listed at load and served like a native
// module's, bad output included.
func TestExtismV2Features(t *testing.T) {
	rt := extismRuntime(t, runtime.Options{})
	m := extismPlugin(t, rt, "v2", runtime.Limits{})
	f := m.Features()
	if len(f.Resources) != 3 || len(f.ResourceTemplates) != 1 || len(f.Prompts) != 1 || f.Prompts[0].Arguments[0].Name != "who" {
		t.Fatalf("features = %+v", f)
	}
	ctx := context.Background()
	res, err := m.ReadResource(ctx, "v2://note", runtime.CallRequest{})
	if err != nil || *res.Contents[0].Text != "a note" || res.Contents[0].MimeType != "text/plain" {
		t.Fatalf("note = %+v, %v", res, err)
	}
	res, err = m.ReadResource(ctx, "v2://pixel", runtime.CallRequest{})
	if err != nil || *res.Contents[0].Blob != "AQID" {
		t.Fatalf("pixel = %+v, %v", res, err)
	}
	res, err = m.ReadResource(ctx, "v2://city/paris", runtime.CallRequest{})
	if err != nil || *res.Contents[0].Text != "city paris" {
		t.Fatalf("template = %+v, %v", res, err)
	}
	_, err = m.ReadResource(ctx, "v2://bad", runtime.CallRequest{})
	if err == nil || err.Kind != tool.KindBadOutput {
		t.Fatalf("bad = %v", err)
	}
	p, err := m.GetPrompt(ctx, "v2_prompt", map[string]string{"who": "you"}, runtime.CallRequest{})
	if err != nil || p.Messages[0].Content.Text != "hi you" {
		t.Fatalf("prompt = %+v, %v", p, err)
	}
	c, err := m.Complete(ctx, tool.CompleteRequest{Ref: tool.CompleteRef{Type: "ref/prompt", Name: "v2_prompt"},
		Argument: tool.CompleteArgument{Name: "who", Value: "y"}}, runtime.CallRequest{})
	if err != nil || strings.Join(c.Values, ",") != "prompt:y" {
		t.Fatalf("complete = %+v, %v", c, err)
	}
	// Tools still work after all of it.
	res2 := m.Tools()[0].Call(ctx, runtime.CallRequest{Arguments: []byte(`{"text":"a"}`)})
	if res2.IsError {
		t.Fatalf("tool call after features: %+v", res2.Error)
	}
}
