package schema

import (
	"encoding/json"
	"testing"
)

// BenchmarkCallStack: a goroutine per call, as the go-sdk runs requests,
// validating echo's arguments and result the way a call does, through
// jsonschema-go (its stack grown up front, growCallStack) or through the
// flat schema's single pass. The frames below the handler in a real call
// (the go-sdk's middleware) make the stack growth dearer than here.
func BenchmarkCallStack(b *testing.B) {
	schema, err := Compile(json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`))
	if err != nil {
		b.Fatal(err)
	}
	if schema.flat == nil {
		b.Fatal("echo's schema is not flat")
	}
	instance := map[string]any{"text": "hello, warden"}
	for _, how := range []string{"validator", "flat"} {
		b.Run(how, func(b *testing.B) {
			done := make(chan error)
			validate := func() error {
				if how == "flat" {
					return schema.Validate(instance)
				}
				_, err := schema.validate(instance) // grows the stack first
				return err
			}
			for b.Loop() {
				go func() {
					if err := validate(); err != nil {
						done <- err
						return
					}
					done <- validate()
				}()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
