package mcpserver

import (
	"encoding/json"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tools/call result is encoded on every call (encodableReplies), and the
// go-sdk's way of encoding one is the costliest part of warden's own stdio
// path: CallToolResult.MarshalJSON copies the result into a wire struct,
// json.Marshal walks it by reflection, each content block's MarshalJSON
// marshals a second wire struct, and the encoder then compacts every
// marshaller's output again, the whole result once more at the top. The
// result of an ordinary call has a fixed shape (text blocks, a raw
// structured content, perhaps _meta and isError): appendCallToolResult
// writes that shape's skeleton itself and leaves every value in it to
// encoding/json (json.Marshal of that value alone), so the bytes are the
// go-sdk's by construction (FuzzCallToolResultWire compares both on every
// result the fuzzer makes). Anything else goes the general way.

// resultTypeField is the index of CallToolResult's unexported resultType
// (go-sdk v1.8.0), which its MarshalJSON writes as "resultType" and which a
// middleware inside encodableReplies may set; nil when the go-sdk has no
// such string field, which turns the fast encoding off.
var resultTypeField = func() []int {
	f, ok := reflect.TypeFor[mcp.CallToolResult]().FieldByName("resultType")
	if !ok || f.Type.Kind() != reflect.String {
		return nil
	}
	return f.Index
}()

// appendCallToolResult appends r encoded exactly as encodeAsSDK's general
// path encodes it, or reports false (dst unchanged in length) when r is not
// of the shape it knows or a value in it does not encode.
func appendCallToolResult(dst []byte, r *mcp.CallToolResult) ([]byte, bool) {
	if r == nil || resultTypeField == nil || r.InputRequests != nil {
		return dst, false
	}
	start := len(dst)
	fail := func() ([]byte, bool) { return dst[:start], false }
	dst = append(dst, '{')
	if len(r.Meta) > 0 {
		dst = append(dst, `"_meta":`...)
		var ok bool
		if dst, ok = appendMarshal(dst, r.Meta); !ok {
			return fail()
		}
		dst = append(dst, ',')
	}
	dst = append(dst, `"content":`...)
	if r.Content == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, c := range r.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			t, ok := c.(*mcp.TextContent)
			if !ok || t == nil || t.Meta != nil || t.Annotations != nil {
				return fail()
			}
			dst = append(dst, `{"type":"text","text":`...)
			if dst, ok = appendMarshal(dst, t.Text); !ok {
				return fail()
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if r.StructuredContent != nil {
		dst = append(dst, `,"structuredContent":`...)
		var ok bool
		if dst, ok = appendMarshal(dst, r.StructuredContent); !ok {
			return fail()
		}
	}
	if r.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	if r.RequestState != "" {
		dst = append(dst, `,"requestState":`...)
		dst, _ = appendMarshal(dst, r.RequestState)
	}
	if rt := reflect.ValueOf(r).Elem().FieldByIndex(resultTypeField).String(); rt != "" {
		dst = append(dst, `,"resultType":`...)
		dst, _ = appendMarshal(dst, rt)
	}
	return append(dst, '}'), true
}

// appendMarshal appends v as json.Marshal encodes it, which is how
// encoding/json encodes v as a field of a struct json.Marshal encodes (the
// HTML escaping on, a marshaller's output compacted): the bytes
// CallToolResult.MarshalJSON makes of it.
func appendMarshal(dst []byte, v any) ([]byte, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return dst, false
	}
	return append(dst, b...), true
}
