package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostileAnswersNeverConfirm answers the real binary's gate
// confirmation (tools.gates hostcalls: confirm) over stdio with what a
// hostile client may send back in place of a person's "yes": an action that
// is not exactly the string "accept", a wrong type, an error, a response
// with an id never asked. None confirms: each call is denied, nothing is
// written, and the session goes on serving.
func TestHostileAnswersNeverConfirm(t *testing.T) {
	t.Parallel()
	e := personEnv(t, "2m")
	s := startRawStdioWith(t, e, `{"elicitation":{}}`)
	out := filepath.Join(e.dir, "out", "x.txt")
	answers := []string{
		`{"result":{"action":"ACCEPT"}}`,
		`{"result":{"action":"accept\u0000"}}`,
		`{"result":{"action":"acc\u0435pt"}}`,
		`{"result":{"action":" accept"}}`,
		`{"result":{"action":["accept"]}}`,
		`{"result":{"action":{"accept":true}}}`,
		`{"result":{"action":1}}`,
		`{"result":{"action":"\ud800accept"}}`,
		`{"result":"accept"}`,
		`{"result":null}`,
		`{"result":{"action":"accept","action":"decline"}}`,
		`{"error":{"code":-1,"message":"accept"}}`,
		`{"error":{"code":-1,"message":1}}`,
		`{"error":"accept"}`,
	}
	for i, a := range answers {
		id := fmt.Sprintf(`"gate-%d"`, i)
		s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"hostcalls","arguments":{"fs":{"op":"write","path":"out/x.txt","content":"hello"}}}}`)
		var reqID json.RawMessage
		for reqID == nil {
			if r := parseRaw(t, s.next()); r.Method == "elicitation/create" {
				reqID = r.ID
			}
		}
		// An accept under an id never asked, the hostile answer, then a
		// decline: a refused answer leaves the question waiting, and the
		// decline ends it; an accepted one makes the decline a late answer.
		s.send(`{"jsonrpc":"2.0","id":"never-asked","result":{"action":"accept"}}`)
		s.send(`{"jsonrpc":"2.0","id":` + string(reqID) + `,` + strings.TrimPrefix(a, "{"))
		s.send(`{"jsonrpc":"2.0","id":` + string(reqID) + `,"result":{"action":"decline"}}`)
		var r rawReply
		for string(r.ID) != id {
			r = s.reply()
		}
		if r.Error != nil || !strings.Contains(string(r.Result), `"isError":true`) || !strings.Contains(string(r.Result), "nothing ran") {
			t.Fatalf("answer %s: the call was not refused: %+v %.400s", a, r.Error, r.Result)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("answer %s: the call wrote %s (%v)", a, out, err)
		}
		s.running()
	}
	// The control: a person's accept runs the call.
	s.send(`{"jsonrpc":"2.0","id":"yes","method":"tools/call","params":{"name":"hostcalls","arguments":{"fs":{"op":"write","path":"out/x.txt","content":"hello"}}}}`)
	var reqID json.RawMessage
	for reqID == nil {
		if r := parseRaw(t, s.next()); r.Method == "elicitation/create" {
			reqID = r.ID
		}
	}
	s.send(`{"jsonrpc":"2.0","id":` + string(reqID) + `,"result":{"action":"accept"}}`)
	// Once confirmed the tool runs, and asks for what config does not
	// grant it (env HOME): a permission prompt, which the person declines;
	// the tool goes on without it and writes its file.
	for {
		r := parseRaw(t, s.next())
		if r.Method == "elicitation/create" {
			s.send(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{"action":"decline"}}`)
			continue
		}
		if r.Method == "" && string(r.ID) == `"yes"` {
			break
		}
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "hello" {
		t.Fatalf("after the person's accept %s = %q, %v", out, b, err)
	}
	s.wantEchoRaw(`"after"`)
}
