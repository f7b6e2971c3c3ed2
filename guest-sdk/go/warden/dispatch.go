package warden

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/warden-run/warden/tool"
)

// Describe returns the descriptor document of the ABI's warden_describe
// export: {"tools": [Descriptor, ...]} for the tools in r.
func (r *Registry) Describe() []byte {
	descriptors := r.descriptors
	if descriptors == nil {
		descriptors = []tool.Descriptor{}
	}
	b, err := json.Marshal(struct {
		Tools []tool.Descriptor `json:"tools"`
		tool.Features
	}{descriptors, r.feat.desc})
	if err != nil {
		// Only a tool's RawMessage schema can fail to encode. Report it as an
		// invalid document: the host refuses the module naming the problem.
		return []byte(fmt.Sprintf(`{"tools":null,"error":%q}`, "encode descriptors: "+err.Error()))
	}
	return b
}

// Dispatch runs one warden_call request (docs/abi.md) against r and returns
// the response JSON. It never panics and always returns a valid response:
//
//   - a request that does not decode, or names no tool of r: an error response;
//   - ArgsValidator's error: "invalid_arguments" unless it carries a kind;
//   - an error from Call: its *tool.Error kind, "failed" when it has none,
//     and "failed" for a kind only the host may report (timeout, ...);
//   - a panic in Call: "failed" with the panic value, the stack in details.
func (r *Registry) Dispatch(request []byte, host HostFuncs) []byte {
	return r.dispatch(nil, request, host)
}

// dispatch is Dispatch appending a successful result to dst, whose storage
// warden_call reuses from one call to the next.
func (r *Registry) dispatch(dst, request []byte, host HostFuncs) []byte {
	var req tool.Request
	name, ok := decodeRequest(request, &req)
	if !ok {
		var err error
		if req, err = unmarshalRequest(request); err != nil {
			return encodeError(Failed("decode request: %v", err), nil)
		}
		name = []byte(req.Tool)
	}
	i, ok := r.lookup(name)
	if !ok {
		return encodeError(NotFound("this module has no tool %q", name), nil)
	}
	args := req.Arguments
	if blankOrNull(args) {
		args = json.RawMessage("{}")
	}
	result, err := run(&r.tools[i], NewContext(req.CallID, req.Cursor, host), args)
	if err != nil {
		return encodeError(err, nil)
	}
	return encodeResult(dst, result)
}

// blankOrNull reports whether b, spaces trimmed, is empty or null; it
// trims only when b may begin or end with a space.
func blankOrNull(b []byte) bool {
	if len(b) > 0 && !maySpace(b[0]) && !maySpace(b[len(b)-1]) {
		return string(b) == "null"
	}
	trimmed := bytes.TrimSpace(b)
	return len(trimmed) == 0 || string(trimmed) == "null"
}

// lookup returns the index of the tool named name. A module usually has a
// few tools: comparing their names costs fewer instructions than hashing.
func (r *Registry) lookup(name []byte) (int, bool) {
	if len(r.tools) > 8 {
		i, ok := r.byName[string(name)] // the conversion does not copy
		return i, ok
	}
	for i := range r.tools {
		if r.tools[i].name == string(name) {
			return i, true
		}
	}
	return 0, false
}

// unmarshalRequest is the request decoded by encoding/json. It is apart so
// that only this path's request escapes to the heap, not the fast path's.
func unmarshalRequest(request []byte) (tool.Request, error) {
	var req tool.Request
	err := json.Unmarshal(request, &req)
	return req, err
}

// run calls t, turning a panic into an error. It returns a nil result only
// together with an error.
func run(t *registered, ctx *Context, args json.RawMessage) (result *tool.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			result, err = nil, ErrorWithDetails(Failed("panic: %v", p),
				map[string]string{"panic": fmt.Sprint(p), "stack": string(debug.Stack())})
		}
	}()
	if t.validator != nil {
		if err := t.validator.ValidateArgs(args); err != nil {
			var te *tool.Error
			if !errors.As(err, &te) {
				err = InvalidArguments("%v", err)
			}
			return nil, err
		}
	}
	result, err = t.tool.Call(ctx, args)
	if err == nil && result == nil {
		result = Result()
	}
	return result, err
}

// guestKinds are the kinds a guest may report; the host turns any other kind
// into bad_output, which would hide the tool's actual message.
var guestKinds = map[tool.Kind]bool{
	tool.KindInvalidArguments: true, tool.KindNotFound: true, tool.KindDenied: true,
	tool.KindFailed: true, tool.KindCancelled: true, tool.KindUnsupported: true,
}

// wireError is the ABI's error response.
type wireError struct {
	Error   wireKind        `json:"error"`
	Details json.RawMessage `json:"details,omitempty"`
}

type wireKind struct {
	Kind    tool.Kind `json:"kind"`
	Message string    `json:"message"`
}

func encodeError(err error, details json.RawMessage) []byte {
	var w wireError
	var te *tool.Error
	if errors.As(err, &te) {
		w.Error.Kind = te.Kind
		// A wrapped error keeps its context ("read config: denied: ...");
		// ErrorWithDetails adds none.
		inner := err
		for de, ok := inner.(*detailedError); ok; de, ok = inner.(*detailedError) {
			inner = de.err
		}
		if inner == error(te) {
			w.Error.Message = te.Message
		} else {
			w.Error.Message = err.Error()
		}
	} else {
		w.Error = wireKind{Kind: tool.KindFailed, Message: err.Error()}
	}
	if !guestKinds[w.Error.Kind] {
		w.Error.Message = fmt.Sprintf("%s: %s", w.Error.Kind, w.Error.Message)
		w.Error.Kind = tool.KindFailed
	}
	var de *detailedError
	if errors.As(err, &de) && de.details != nil && !bytes.Equal(de.details, []byte("null")) {
		details = de.details
	}
	w.Details = details
	b, marshalErr := json.Marshal(w)
	if marshalErr != nil {
		w.Details = nil
		b, _ = json.Marshal(w)
	}
	return b
}

// encodeResult encodes r, appending it to dst when the fast path can.
func encodeResult(dst []byte, r *tool.Result) []byte {
	if r.IsError || r.Error != nil {
		err := r.Error
		if err == nil {
			err = Failed("%s", resultText(r))
		}
		return encodeError(err, r.Details)
	}
	if dst == nil {
		dst = make([]byte, 0, 256)
	}
	if b, ok := appendResult(dst, r); ok {
		return b
	}
	wire := struct {
		Content           []tool.Content  `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
		Details           json.RawMessage `json:"details,omitempty"`
		NextCursor        string          `json:"nextCursor,omitempty"`
	}{r.Content, r.StructuredContent, r.Details, r.NextCursor}
	if wire.Content == nil {
		wire.Content = []tool.Content{}
	}
	b, err := json.Marshal(wire)
	if err != nil {
		return encodeError(Failed("encode result: %v", err), nil)
	}
	return b
}

func resultText(r *tool.Result) string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == tool.ContentText {
			parts = append(parts, c.Text)
		}
	}
	if len(parts) == 0 {
		return "tool reported an error without a message"
	}
	return strings.Join(parts, "\n")
}

// Dispatch runs one request against the tools registered with Register, as
// the warden_call export does. Tests use it to exercise a module's tools
// exactly as the host will, without building wasm.
func Dispatch(request []byte, host HostFuncs) []byte { return module.Dispatch(request, host) }

// Describe returns the descriptor document of the tools registered with
// Register, as the warden_describe export does.
func Describe() []byte { return module.Describe() }
