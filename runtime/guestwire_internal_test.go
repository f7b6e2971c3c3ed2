package runtime

import (
	"bytes"
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
	f.Fuzz(func(t *testing.T, saved []byte) {
		// The fuzzer's bytes may not be modified: decode a copy of them,
		// which the aliasing check below overwrites.
		raw := bytes.Clone(saved)
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
		// Nothing decoded aliases raw: overwriting every byte of it leaves
		// the result equal to a decoding of the bytes as they were.
		for i := range raw {
			raw[i] = 'X'
		}
		var again guestResponse
		if !decodeGuestResponse(saved, &again) {
			t.Fatalf("accepted %q once, refused it the second time", saved)
		}
		if !reflect.DeepEqual(fast, again) {
			t.Fatalf("%q: the decoded response changed when its bytes were overwritten (it aliases them)\nnow %#v\nwant %#v", saved, fast, again)
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
