package warden

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/warden-run/warden/tool"
)

// Tool is one tool a module provides. It mirrors the seeds' Tool trait:
// a descriptor plus a call.
type Tool interface {
	// Descriptor describes the tool. It is read once, by Register, so it
	// must not change afterwards.
	Descriptor() tool.Descriptor
	// Call runs the tool on arguments that the host has already validated
	// against Descriptor().InputSchema. A returned error that is not a
	// *tool.Error becomes a "failed" error; a panic is recovered and becomes
	// a "failed" error too (see Dispatch).
	Call(ctx *Context, args json.RawMessage) (*tool.Result, error)
}

// ArgsValidator is implemented by tools that check their arguments beyond
// what the input schema can express. ValidateArgs runs before Call; an error
// that is not a *tool.Error becomes "invalid_arguments".
type ArgsValidator interface {
	ValidateArgs(args json.RawMessage) error
}

// Registry is a set of tools addressed by name. The module's own registry is
// filled by Register; tests can build their own with NewRegistry.
type Registry struct {
	tools       []registered
	byName      map[string]int
	descriptors []tool.Descriptor
	// feat holds the resources, templates and prompts (resources.go).
	feat features
}

type registered struct {
	tool Tool
	name string
	// validator is tool as an ArgsValidator, or nil: asserted once here
	// rather than on every call.
	validator ArgsValidator
}

// NewRegistry returns a registry holding tools. It panics like Register does.
func NewRegistry(tools ...Tool) *Registry {
	r := &Registry{byName: map[string]int{}}
	r.Add(tools...)
	return r
}

// Add registers tools with r. It panics if two tools share a name: dispatch
// is by name, so a duplicate is a programming error that must not reach the
// host as an ambiguous module. Descriptors are otherwise not validated here;
// the host validates them at load and rejects only the faulty tool.
func (r *Registry) Add(tools ...Tool) {
	for _, t := range tools {
		d := t.Descriptor()
		if _, dup := r.byName[d.Name]; dup {
			panic(fmt.Sprintf("warden: tool %q registered twice", d.Name))
		}
		r.byName[d.Name] = len(r.tools)
		validator, _ := t.(ArgsValidator)
		r.tools = append(r.tools, registered{tool: t, name: d.Name, validator: validator})
		r.descriptors = append(r.descriptors, d)
	}
}

// Descriptors returns the descriptors of r's tools in registration order.
func (r *Registry) Descriptors() []tool.Descriptor {
	return append([]tool.Descriptor(nil), r.descriptors...)
}

// module is the registry behind this module's exports. It is the one piece of
// package state the SDK needs: init functions have nowhere else to put tools.
var module = NewRegistry()

// Register adds tools to the module. Call it from an init function (see the
// package documentation); tools registered after _initialize has returned
// are still served, but the host reads the descriptor list only once, at load.
func Register(tools ...Tool) {
	module.Add(tools...)
	warmOnce.Do(warm)
}

var warmOnce sync.Once

// warm runs the SDK's own JSON paths once, during init. encoding/json builds
// its encoder and decoder for a type by reflection the first time it meets
// it, which costs a standard-Go guest over a million instructions. The host
// snapshots the module right after _initialize and starts every call from
// that snapshot (docs/abi.md, "Limits and state"), so work done here is done
// once per module load instead of once per call: measured on echo, the
// first call after a reset drops from 1.3M to 0.17M units of fuel.
func warm() {
	var req tool.Request
	_ = json.Unmarshal([]byte(`{"tool":"t","arguments":{"a":[1,"b",true,null]},"callId":"c","cursor":"k"}`), &req)
	structured, _ := WithStructured(Text("t"), map[string]any{"a": 1})
	_ = encodeResult(nil, WithDetails(structured, map[string]string{"a": "b"}))
	_ = encodeError(Failed("f"), nil)
}
