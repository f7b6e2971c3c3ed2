package tool

import (
	"encoding/json"
	"testing"
)

// FuzzParseFeatures: any descriptor document is accepted (and then every
// entry is valid and unique) or refused with an error; nothing panics.
func FuzzParseFeatures(f *testing.F) {
	f.Add([]byte(`{"resources":[{"uri":"test://a","name":"a","mimeType":"text/plain"}],"resourceTemplates":[{"uriTemplate":"test://t/{id}","name":"t"}],"prompts":[{"name":"p","arguments":[{"name":"a","required":true}]}]}`))
	f.Add([]byte(`{"resources":[{"uri":"a b","name":""}],"resourceTemplates":[{"uriTemplate":"x://{"}],"prompts":[{"name":"p"},{"name":"p"}]}`))
	f.Add([]byte(`{"resources":null,"prompts":[{"name":"\u202e"}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		feats, err := ParseFeatures(doc)
		if err != nil {
			return
		}
		uris := map[string]bool{}
		for i := range feats.Resources {
			r := &feats.Resources[i]
			if r.Validate("r") != nil || uris[r.URI] {
				t.Fatalf("accepted an invalid or duplicate resource %+v", r)
			}
			uris[r.URI] = true
		}
		for i := range feats.ResourceTemplates {
			if _, err := ParseURITemplate(feats.ResourceTemplates[i].URITemplate); err != nil {
				t.Fatalf("accepted template %q: %v", feats.ResourceTemplates[i].URITemplate, err)
			}
		}
	})
}

// FuzzFeatureResponses: whatever a guest returns, the parsers answer a
// judged result or a typed error, and a result they accept re-encodes.
func FuzzFeatureResponses(f *testing.F) {
	f.Add([]byte(`{"contents":[{"uri":"test://a","mimeType":"text/plain","text":"x"}]}`))
	f.Add([]byte(`{"contents":[{"uri":"test://a","blob":"AQID","text":"x"}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":{"type":"image","data":"AQID","mimeType":"image/png"}}]}`))
	f.Add([]byte(`{"completion":{"values":["a","b"],"total":2,"hasMore":false}}`))
	f.Add([]byte(`{"error":{"kind":"timeout","message":"x"}}`))
	f.Add([]byte(`{"error":{"kind":"not_found","message":"x"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		check := func(v any, err *Error) {
			if err != nil {
				if err.Kind == "" {
					t.Fatalf("error without a kind: %+v", err)
				}
				if !guestErrorKinds[err.Kind] && err.Kind != KindBadOutput {
					t.Fatalf("guest reached kind %s", err.Kind)
				}
				return
			}
			if _, e := json.Marshal(v); e != nil {
				t.Fatalf("accepted result does not encode: %v", e)
			}
		}
		r, err := ParseResourceResult(raw, "test://a")
		check(r, err)
		if err == nil {
			for _, c := range r.Contents {
				if (c.Text == nil) == (c.Blob == nil) {
					t.Fatalf("accepted contents %+v", c)
				}
			}
		}
		p, err := ParsePromptResult(raw, "p")
		check(p, err)
		c, err := ParseCompletion(raw)
		check(c, err)
		if err == nil && (len(c.Values) > MaxCompletionValues || c.Values == nil) {
			t.Fatalf("accepted completion %+v", c)
		}
	})
}
