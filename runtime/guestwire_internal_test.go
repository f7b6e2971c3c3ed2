package runtime

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzGuestResponseDifferential is the differential test of
// decodeGuestResponse: whatever it accepts, json.Unmarshal accepts too and
// decodes into the same guestResponse.
func FuzzGuestResponseDifferential(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hello 7"}],"structuredContent":{"text":"hello 7"}}`,
		` { "structuredContent" : {"a":[1,{"b":"}\"]"}]} , "content" : [ { "text" : "x" , "type" : "text" } ] } `,
		`{"content":[]}`,
		`{}`,
		`{"content":null}`,
		`{"Content":[{"type":"text","text":"case"}]}`,
		`{"content":[{"type":"text","text":"a"}],"content":[]}`,
		`{"content":[{"type":"text","text":"a\nb"}]}`,
		`{"content":[{"type":"image","data":"AA=="}]}`,
		`{"content":[{"type":"text"}],"structuredContent":{"a":1}} x`,
		`{"structuredContent":{"a":01}}`,
		`{"structuredContent":[1]}`,
		"{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}",
		`{"error":{"kind":"failed","message":"no"}}`,
		`{"content":[{"type":"text","text":"x"}],"nextCursor":"c"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var fast guestResponse
		if !decodeGuestResponse(raw, &fast) {
			if !reflect.DeepEqual(fast, guestResponse{}) {
				t.Fatalf("refused %q but changed the response: %+v", raw, fast)
			}
			return
		}
		var want guestResponse
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", raw, err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("%q\ndecoded %#v\nencoding/json %#v", raw, fast, want)
		}
		if len(fast.StructuredContent) > 0 && len(raw) > 0 && &fast.StructuredContent[0] == &raw[0] {
			t.Fatal("the structured content aliases the guest's bytes")
		}
	})
}

// TestGuestResponseFastShapes pins that an ordinary answer takes the fast
// decoding, so that losing it fails a test.
func TestGuestResponseFastShapes(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"content":[{"type":"text","text":"hello 7"}],"structuredContent":{"text":"hello 7"}}`: true,
		`{"content":[{"type":"text","text":"hi"}]}`:                                             true,
		`{"content":[{"type":"text","text":"a\nb"}]}`:                                           false,
		`{"error":{"kind":"failed","message":"no"}}`:                                            false,
	} {
		var resp guestResponse
		if got := decodeGuestResponse([]byte(raw), &resp); got != want {
			t.Errorf("%s: fast %v, want %v", raw, got, want)
		}
	}
}
