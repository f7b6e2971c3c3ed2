package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/warden-run/warden/tool"
)

// BenchmarkCallStack is the mechanism behind growCallStack: a goroutine
// per call, as the go-sdk runs requests, validating echo's arguments and
// result the way a call does, with its stack grown up front or left to
// grow step by step. The frames below the handler in a real call (the
// go-sdk's middleware) make each step dearer than here.
func BenchmarkCallStack(b *testing.B) {
	schema, err := tool.CompileSchema(json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`))
	if err != nil {
		b.Fatal(err)
	}
	instance := map[string]any{"text": "hello, warden"}
	for _, grown := range []bool{false, true} {
		name := "stepwise"
		if grown {
			name = "grown"
		}
		b.Run(name, func(b *testing.B) {
			done := make(chan error)
			for b.Loop() {
				go func() {
					if grown {
						growCallStack(1)
					}
					if err := schema.Validate(instance); err != nil {
						done <- err
						return
					}
					done <- schema.Validate(instance)
				}()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
