package warden

import (
	"encoding/json"
	"testing"

	"github.com/warden-run/warden/tool"
)

func fuzzRegistry() *Registry {
	r := NewRegistry()
	r.AddResources(ResourceFunc{Desc: tool.ResourceDescriptor{URI: "x://a", Name: "a"},
		ReadFunc: func(_ *Context, uri string) (*tool.ResourceResult, error) {
			return TextResource(uri, "text/plain", "a"), nil
		}})
	r.AddTemplates(TemplateFunc{Desc: tool.ResourceTemplateDescriptor{URITemplate: "x://t/{id}", Name: "t"},
		ReadFunc: func(_ *Context, uri string, vars map[string]string) (*tool.ResourceResult, error) {
			return TextResource(uri, "text/plain", vars["id"]), nil
		}})
	r.AddPrompts(PromptFunc{Desc: tool.PromptDescriptor{Name: "p"},
		GetFunc: func(_ *Context, args map[string]string) (*tool.PromptResult, error) {
			return Messages(User(TextBlock(args["a"]))), nil
		},
		CompleteFunc: func(_ *Context, argument, value string, _ map[string]string) (*tool.Completion, error) {
			return Completions(value), nil
		}})
	return r
}

// FuzzFeatureRequests: whatever the host sends the resource, prompt and
// completion exports, the SDK answers valid JSON and never panics.
func FuzzFeatureRequests(f *testing.F) {
	f.Add([]byte(`{"uri":"x://t/7"}`))
	f.Add([]byte(`{"name":"p","arguments":{"a":"b"}}`))
	f.Add([]byte(`{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"v"}}`))
	f.Add([]byte(`{"uri":null}`))
	r := fuzzRegistry()
	f.Fuzz(func(t *testing.T, req []byte) {
		for _, out := range [][]byte{r.ReadResource(req, nopHost{}), r.GetPrompt(req, nopHost{}), r.Complete(req, nopHost{})} {
			if !json.Valid(out) {
				t.Fatalf("invalid response %q", out)
			}
		}
	})
}

func TestFeatureDispatch(t *testing.T) {
	r := fuzzRegistry()
	doc := r.Describe()
	feats, err := tool.ParseFeatures(doc)
	if err != nil || len(feats.Resources) != 1 || len(feats.ResourceTemplates) != 1 || len(feats.Prompts) != 1 {
		t.Fatalf("describe = %s, %v", doc, err)
	}
	res, terr := tool.ParseResourceResult(r.ReadResource([]byte(`{"uri":"x://t/42"}`), nopHost{}), "x://t/42")
	if terr != nil || *res.Contents[0].Text != "42" {
		t.Fatalf("template read = %+v, %v", res, terr)
	}
	if _, terr := tool.ParseResourceResult(r.ReadResource([]byte(`{"uri":"x://zzz"}`), nopHost{}), "x://zzz"); terr == nil || terr.Kind != tool.KindNotFound {
		t.Fatalf("unknown read = %v", terr)
	}
	p, terr := tool.ParsePromptResult(r.GetPrompt([]byte(`{"name":"p","arguments":{"a":"hey"}}`), nopHost{}), "p")
	if terr != nil || p.Messages[0].Content.Text != "hey" {
		t.Fatalf("prompt = %+v, %v", p, terr)
	}
	c, terr := tool.ParseCompletion(r.Complete([]byte(`{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"v"}}`), nopHost{}))
	if terr != nil || len(c.Values) != 1 || c.Values[0] != "v" {
		t.Fatalf("complete = %+v, %v", c, terr)
	}
}
