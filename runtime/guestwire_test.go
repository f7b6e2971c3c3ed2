package runtime_test

import (
	"strings"
	"testing"

	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// TestGuestOutputNotUTF8 runs guests whose answer holds bytes that are not
// UTF-8. In structured content they would reach the client as they are (a
// json.RawMessage is sent byte for byte), so the call fails as bad output,
// whichever decoding read the answer; in a text block they are decoded as
// U+FFFD, as encoding/json decodes them, and the call succeeds. Either way
// the next call on the tool succeeds.
func TestGuestOutputNotUTF8(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	for _, c := range []struct {
		name, answer, text string
	}{
		// The fast decoding (runtime/guestwire.go) takes this answer.
		{name: "structured", answer: "{\"structuredContent\":{\"a\":\"\xff\"}}"},
		{name: "structuredkey", answer: "{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"structuredContent\":{\"\xc3\":1}}"},
		// An escape sends this one to encoding/json.
		{name: "structuredslow", answer: "{\"content\":[{\"type\":\"text\",\"text\":\"a\\nb\"}],\"structuredContent\":{\"a\":[\"\xed\xa0\x80\"]}}"},
		{name: "text", answer: "{\"content\":[{\"type\":\"text\",\"text\":\"a\xffb\"}]}", text: "a\ufffdb"},
		{name: "textstructured", answer: "{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}],\"structuredContent\":{\"a\":\"ok\"}}", text: "\ufffd"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body, data := respond(c.answer)
			tl := loadTool(t, rt, "utf8"+c.name, watFixture{name: "utf8" + c.name, failBody: body, funcs: data}.build(t), runtime.Limits{})
			for range 2 {
				res := call(t, tl, `{"fail":true}`)
				if c.text != "" {
					wantOK(t, res, c.text)
				} else {
					e := wantKind(t, res, tool.KindBadOutput)
					if want := "utf8" + c.name + " structuredContent is not valid UTF-8"; e.Message != want {
						t.Errorf("message %q, want %q", e.Message, want)
					}
					if strings.ContainsRune(e.Message, '\ufffd') {
						t.Errorf("message %q", e.Message)
					}
				}
				wantOK(t, call(t, tl, `{}`), "pong")
			}
		})
	}
}
