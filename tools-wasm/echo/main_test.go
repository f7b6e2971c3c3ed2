package main

import (
	"testing"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/internal/schema"
	"github.com/warden-run/warden/tool"
)

func TestEcho(t *testing.T) {
	reg := warden.NewRegistry(echo{})
	for args, want := range map[string]string{
		`{"text":"hi \"there\""}`: `{"content":[{"type":"text","text":"hi \"there\""}],"structuredContent":{"text":"hi \"there\""}}`,
		`{"text":""}`:             `{"content":[{"type":"text"}],"structuredContent":{"text":""}}`,
		`{"text":7}`:              `{"error":{"kind":"invalid_arguments","message":"argument \"text\": expected string, got JSON number"}}`,
	} {
		if got := string(reg.Dispatch([]byte(`{"tool":"echo","arguments":`+args+`}`), nil)); got != want {
			t.Errorf("%s:\ngot  %s\nwant %s", args, got, want)
		}
	}
	d := echo{}.Descriptor()
	schemas, err := schema.CompileDescriptor(&d)
	if err != nil {
		t.Fatal(err)
	}
	// Every result must satisfy the output schema the host will enforce.
	if err := schemas.Output.Validate(map[string]any{"text": "hi"}); err != nil {
		t.Fatal(err)
	}
	if d.Annotations == nil || !*d.Annotations.ReadOnlyHint || !*d.Annotations.IdempotentHint || tool.ValidName(d.Name) != true {
		t.Fatalf("descriptor = %+v", d)
	}
}
