package warden_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

// wordCount is a complete tool. In a real module it lives in package main
// and registers itself with warden.Register(wordCount{}) from init.
type wordCount struct{}

func (wordCount) Descriptor() tool.Descriptor {
	readOnly := true
	return tool.Descriptor{
		Name:         "word_count",
		Description:  "Counts the words in a text.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"words":{"type":"integer"}},"required":["words"]}`),
		Annotations:  &tool.Annotations{ReadOnlyHint: &readOnly},
	}
}

func (wordCount) Call(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[struct {
		Text string `json:"text"`
	}](args)
	if err != nil {
		return nil, err // already an invalid_arguments error naming the field
	}
	if strings.TrimSpace(a.Text) == "" {
		return nil, warden.InvalidArguments("text must contain at least one word")
	}
	ctx.Logf(warden.LevelDebug, "counting %d bytes", len(a.Text))
	return warden.JSON(map[string]int{"words": len(strings.Fields(a.Text))})
}

// Example runs a tool exactly as the module's warden_call export would,
// which is also how to unit-test a tool without building wasm.
func Example() {
	tools := warden.NewRegistry(wordCount{})
	fmt.Println(string(tools.Dispatch([]byte(`{"tool":"word_count","arguments":{"text":"to be or not"}}`), nil)))
	fmt.Println(string(tools.Dispatch([]byte(`{"tool":"word_count","arguments":{"text":" "}}`), nil)))
	// Output:
	// {"content":[{"type":"text","text":"{\"words\":4}"}],"structuredContent":{"words":4}}
	// {"error":{"kind":"invalid_arguments","message":"text must contain at least one word"}}
}

// ExampleHost shows a call to a host capability. Whether it succeeds depends
// on what config.yaml grants the tool; without a grant the host answers
// "denied", which the tool can return unchanged.
func ExampleHost() {
	ctx := warden.NewContext("c-1", "", nil) // no host: every capability is denied
	var file struct {
		Content string `json:"content"`
	}
	err := warden.Host(ctx, "fs", map[string]string{"op": "read", "path": "README.md"}, &file)
	fmt.Println(tool.KindOf(err))
	// Output: denied
}
