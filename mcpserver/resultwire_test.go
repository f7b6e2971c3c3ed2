package mcpserver

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callToolResultOf builds a result from the fuzzer's values; the bits of
// shape choose its parts, so that every field appendCallToolResult writes or
// refuses is exercised, and results of shapes it does not know too.
func callToolResultOf(t *testing.T, text, raw, metaKey string, shape uint16) *mcp.CallToolResult {
	r := &mcp.CallToolResult{}
	if shape&(1<<8) != 0 {
		// The resultType the go-sdk's middleware sets can only be set
		// from outside by decoding.
		rt := []string{"complete", "input_required", text}[int(shape>>9)%3]
		wire, _ := json.Marshal(map[string]string{"resultType": rt})
		if err := json.Unmarshal(wire, r); err != nil {
			t.Skip()
		}
	}
	if shape&1 == 0 {
		r.Content = []mcp.Content{}
	}
	for i := range int(shape>>1) % 3 {
		c := &mcp.TextContent{Text: text}
		switch {
		case shape&(1<<3) != 0 && i == 1:
			c.Meta = mcp.Meta{metaKey: text}
		case shape&(1<<14) != 0 && i == 0:
			c.Annotations = &mcp.Annotations{Priority: 0.5}
		}
		r.Content = append(r.Content, c)
	}
	if shape&(1<<15) != 0 {
		r.Content = append(r.Content, &mcp.ImageContent{Data: []byte(text), MIMEType: "image/png"})
	}
	switch (shape >> 4) % 4 {
	case 1:
		r.StructuredContent = json.RawMessage(raw) // possibly invalid: then it fails both ways
	case 2:
		r.StructuredContent = map[string]any{metaKey: text}
	case 3:
		r.StructuredContent = json.RawMessage(nil)
	}
	if shape&(1<<6) != 0 {
		r.Meta = mcp.Meta{metaKey: raw, "n": 1.5}
	}
	if shape&(1<<7) != 0 {
		r.IsError = true
	}
	if shape&(1<<11) != 0 {
		r.RequestState = text
	}
	if shape&(1<<12) != 0 {
		r.InputRequests = mcp.InputRequestMap{}
	}
	return r
}

// FuzzCallToolResultWire is the differential test of appendCallToolResult:
// whatever it accepts, it encodes into the bytes of the go-sdk's general
// encoding; what that cannot encode, it does not accept.
func FuzzCallToolResultWire(f *testing.F) {
	f.Add("hello 7", `{"text":"hello 7"}`, "k", uint16(2|1<<4))
	f.Add("e<b>&'\u2028\x01\xff", `{"a":"<>&\u2028", "b" : [1, 2.50e10]}`, "<k>", uint16(4|1<<4|1<<6|1<<7))
	f.Add("", `null`, "", uint16(1|1<<4|1<<8))
	f.Add("x", `{`, "k", uint16(2|1<<4))
	f.Add("st", `{}`, "k", uint16(2|2<<4|1<<8|1<<9|1<<11))
	f.Add("m", `{}`, "k", uint16(4|1<<3|3<<4|1<<12|1<<14|1<<15))
	f.Fuzz(func(t *testing.T, text, raw, metaKey string, shape uint16) {
		r := callToolResultOf(t, text, raw, metaKey, shape)
		want, werr := encodeAsSDKGeneral(r)
		got, ok := appendCallToolResult([]byte("prefix"), r)
		if !bytes.HasPrefix(got, []byte("prefix")) {
			t.Fatalf("the prefix was lost: %q", got)
		}
		got = got[len("prefix"):]
		switch {
		case !ok && len(got) != 0:
			t.Fatalf("refused, but appended %q", got)
		case ok && werr != nil:
			t.Fatalf("encoded %s; the go-sdk's encoding fails: %v", got, werr)
		case ok && !bytes.Equal(got, want):
			t.Fatalf("encoded %s\nthe go-sdk's encoding %s", got, want)
		}
		via, err := encodeAsSDK(r)
		if (err == nil) != (werr == nil) || !bytes.Equal(via, want) {
			t.Fatalf("encodeAsSDK: %s (%v); general: %s (%v)", via, err, want, werr)
		}
		if err != nil {
			return
		}
		// The stdio fast path encodes the wrapper encodableReplies made:
		// its bytes are what the go-sdk's encoder makes of it.
		wrapped := &encodedResult{Result: r, json: via}
		again, err := encodeAsSDK(wrapped)
		sdk, serr := encodeAsSDKGeneral(wrapped)
		if err != nil || serr != nil || !bytes.Equal(again, sdk) {
			t.Fatalf("the encoded result: %s (%v); the go-sdk's encoding of it: %s (%v)", again, err, sdk, serr)
		}
	})
}

// TestCallToolResultWireShapes pins which shapes take the fast encoding: an
// ordinary call's result must, or the cut is lost without a test failing.
func TestCallToolResultWireShapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *mcp.CallToolResult
		ok   bool
	}{
		{"text and structured", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}, StructuredContent: json.RawMessage(`{"text":"hi"}`)}, true},
		{"an error with _meta", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no"}}, IsError: true, Meta: mcp.Meta{"k": "v"}}, true},
		{"an image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}}, false},
		{"input requests", &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}}, false},
		{"invalid structured content", &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: json.RawMessage(`{`)}, false},
	} {
		got, ok := appendCallToolResult(nil, tc.r)
		if ok != tc.ok {
			t.Errorf("%s: fast encoding %v (%s), want %v", tc.name, ok, got, tc.ok)
		}
	}
	if resultWire.typeField == nil {
		t.Fatal("the fast encoding is off: the go-sdk's types changed (TestResultShapePinned), its CallToolResult has no resultType string field, or it encodes newResultEncoder's probe result differently")
	}
}

// TestResultShapePinned pins the go-sdk's CallToolResult and TextContent to
// the fields the fast encoding knows: a go-sdk update that adds, removes,
// retypes or retags one fails here, naming it, before its results quietly
// go the slow way (or, without the check, lose the field).
func TestResultShapePinned(t *testing.T) {
	got := resultShapeOf()
	for _, f := range got {
		if !slices.Contains(knownResultShape, f) {
			t.Errorf("the go-sdk has %s, which appendCallToolResult does not know: teach it the field (and FuzzCallToolResultWire), then add it to knownResultShape", f)
		}
	}
	for _, f := range knownResultShape {
		if !slices.Contains(got, f) {
			t.Errorf("the go-sdk no longer has %s, which appendCallToolResult writes", f)
		}
	}
	if !t.Failed() && !slices.Equal(got, knownResultShape) {
		t.Errorf("the go-sdk's fields are in another order:\n%q\nknown:\n%q", got, knownResultShape)
	}
}

// TestResultShapeMismatchTurnsFastEncodingOff checks that a go-sdk whose
// types differ from knownResultShape gets no fast encoding: every result
// then goes the general way, which knows every field.
func TestResultShapeMismatchTurnsFastEncodingOff(t *testing.T) {
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}
	if _, ok := newResultEncoder(resultShapeOf()).append(nil, r); !ok {
		t.Fatal("the go-sdk's own shape: the fast encoding is off")
	}
	known := knownResultShape
	for name, shape := range map[string][]string{
		"a new field":      append(slices.Clone(known), "CallToolResult.Extra string `json:\"extra,omitempty\"`"),
		"a new text field": append(slices.Clone(known), "TextContent.Lang string"),
		"a field gone":     slices.Delete(slices.Clone(known), 3, 4),
		"a field retagged": slices.Replace(slices.Clone(known), 3, 4, "CallToolResult.IsError bool `json:\"is_error,omitempty\"`"),
		"no fields at all": nil,
	} {
		e := newResultEncoder(shape)
		if e.typeField != nil {
			t.Errorf("%s: the fast encoding is on", name)
		}
		if b, ok := e.append([]byte("x"), r); ok || string(b) != "x" {
			t.Errorf("%s: encoded %q (ok %v), want a refusal", name, b, ok)
		}
	}
}
