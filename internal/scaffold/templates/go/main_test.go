package main

import (
	"encoding/json"
	"testing"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

// go test runs the tool on this machine, not in wasm: warden.FakeHost
// stands in for warden (its Files, Memory and Env serve the capability
// shortcuts warden.ReadFile, warden.MemoryGet, ...), and make test then
// calls the built module through warden itself.
func TestWordCount(t *testing.T) {
	host := &warden.FakeHost{}
	res, err := wordCount{}.Call(warden.NewContext("test", "", host), json.RawMessage(`{"text":"hello from\twarden"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.StructuredContent); got != `{"words":3}` {
		t.Errorf("structured content = %s, want {\"words\":3}", got)
	}
	_, err = wordCount{}.Call(warden.NewContext("test", "", host), json.RawMessage(`{}`))
	if tool.KindOf(err) != tool.KindInvalidArguments {
		t.Errorf("without text: %v, want kind invalid_arguments", err)
	}
}
