package mcpserver

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"

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
// result the fuzzer makes). Anything else goes the general way, and so does
// everything if the go-sdk's types are not the ones it knows
// (newResultEncoder).

// knownResultShape is every field of the go-sdk's CallToolResult and
// TextContent (go-sdk v1.8.0), with its type and struct tag, as
// resultShapeOf lists them: the shape appendCallToolResult writes. A field
// the go-sdk adds would be silently dropped by the hand encoding, and a
// retagged one written under its old name; so a go-sdk whose types differ
// at all turns the fast encoding off (newResultEncoder), and
// TestResultShapePinned fails naming the difference.
var knownResultShape = []string{
	"CallToolResult.Meta mcp.Meta `json:\"_meta,omitempty\"`",
	"CallToolResult.Content []mcp.Content `json:\"content\"`",
	"CallToolResult.StructuredContent interface {} `json:\"structuredContent,omitempty\"`",
	"CallToolResult.IsError bool `json:\"isError,omitempty\"`",
	"CallToolResult.InputRequests mcp.InputRequestMap `json:\"inputRequests,omitempty\"`",
	"CallToolResult.RequestState string `json:\"requestState,omitempty\"`",
	"CallToolResult.resultType mcp.resultType",
	"CallToolResult.err error",
	"TextContent.Text string",
	"TextContent.Meta mcp.Meta",
	"TextContent.Annotations *mcp.Annotations",
}

// resultShapeOf lists the fields of the go-sdk's types the fast encoding
// writes, one "Type.Field type `tag`" line each, in declaration order.
func resultShapeOf() []string {
	var shape []string
	for _, t := range []reflect.Type{reflect.TypeFor[mcp.CallToolResult](), reflect.TypeFor[mcp.TextContent]()} {
		for f := range t.Fields() {
			line := t.Name() + "." + f.Name + " " + f.Type.String()
			if f.Tag != "" {
				line += " `" + string(f.Tag) + "`"
			}
			shape = append(shape, line)
		}
	}
	return shape
}

// resultEncoder is appendCallToolResult's encoding for one go-sdk.
type resultEncoder struct {
	// typeField is the index of CallToolResult's unexported resultType,
	// which its MarshalJSON writes as "resultType" and which a middleware
	// inside encodableReplies may set. Nil turns the fast encoding off:
	// every result then goes the general way.
	typeField []int
}

// resultWire is the encoder of the go-sdk warden is built with.
var resultWire = newResultEncoder(resultShapeOf())

// newResultEncoder returns the encoder for a go-sdk whose types have shape
// (resultShapeOf), off unless that is knownResultShape and one result of
// every part it writes encodes into the go-sdk's own bytes (which also
// checks the keys the go-sdk's MarshalJSON methods write, which reflection
// cannot see).
func newResultEncoder(shape []string) resultEncoder {
	if !slices.Equal(shape, knownResultShape) {
		return resultEncoder{}
	}
	f, ok := reflect.TypeFor[mcp.CallToolResult]().FieldByName("resultType")
	if !ok || f.Type.Kind() != reflect.String {
		return resultEncoder{}
	}
	e := resultEncoder{typeField: f.Index}
	var probe mcp.CallToolResult
	if json.Unmarshal([]byte(`{"resultType":"complete"}`), &probe) != nil {
		return resultEncoder{}
	}
	probe.Meta = mcp.Meta{"k": "v"}
	probe.Content = []mcp.Content{&mcp.TextContent{Text: "t"}}
	probe.StructuredContent = json.RawMessage(`{"s":1}`)
	probe.IsError = true
	probe.RequestState = "r"
	got, ok := e.append(nil, &probe)
	want, err := encodeAsSDKGeneral(&probe)
	if !ok || err != nil || !bytes.Equal(got, want) {
		return resultEncoder{}
	}
	return e
}

// appendCallToolResult appends r encoded exactly as encodeAsSDK's general
// path encodes it, or reports false (dst unchanged in length) when r is not
// of the shape it knows or a value in it does not encode.
func appendCallToolResult(dst []byte, r *mcp.CallToolResult) ([]byte, bool) {
	return resultWire.append(dst, r)
}

func (e resultEncoder) append(dst []byte, r *mcp.CallToolResult) ([]byte, bool) {
	if r == nil || e.typeField == nil || r.InputRequests != nil {
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
	if rt := reflect.ValueOf(r).Elem().FieldByIndex(e.typeField).String(); rt != "" {
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
