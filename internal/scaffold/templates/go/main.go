// Command __NAME__ is a warden tool: it counts the words in a text.
package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

// A reactor never runs main: the runtime calls _initialize, which runs
// init, and then the warden_* exports. So tools register here.
func init() { warden.Register(wordCount{}) }

// main is required by the compiler and never runs.
func main() {}

type wordCount struct{}

func (wordCount) Descriptor() tool.Descriptor {
	readOnly := true
	return tool.Descriptor{
		Name:         "__NAME__",
		Description:  "Counts the words in a text.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"words":{"type":"integer"}},"required":["words"]}`),
		Annotations:  &tool.Annotations{ReadOnlyHint: &readOnly},
		// A tool that runs for minutes may run as an MCP task, under the
		// task budget instead of the interactive timeout (docs/tasks.md):
		// Execution: &tool.Execution{TaskSupport: tool.TaskOptional},
	}
}

func (wordCount) Call(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[struct {
		Text *string `json:"text"`
	}](args)
	if err != nil {
		return nil, err // an invalid_arguments error naming the field
	}
	if a.Text == nil {
		return nil, warden.InvalidArguments("text is required")
	}
	// strings.Fields splits at Unicode white space; count runs of
	// non-space bytes between ASCII white space only, as the tool promises.
	words := len(strings.FieldsFunc(*a.Text, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
	}))
	return warden.WithStructured(warden.Text(fmt.Sprintf("%d words", words)), map[string]int{"words": words})
}
