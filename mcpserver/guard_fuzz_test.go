package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// pingID is the id of the fuzz target's own pings, which no seed uses.
const pingID = `"fuzz-ping-7c1e"`

// FuzzGuardedTransport sends arbitrary bytes, as lines, to a real Server
// over the guarded stdio transport. Invariants: nothing panics; every line
// the server writes is one JSON-RPC message (or a batch of them); every
// complete line that is neither blank, nor a notification, nor a response
// from the client, nor a batch gets a reply (a result or a JSON-RPC error);
// and the connection stays usable: a ping sent after it all is answered.
func FuzzGuardedTransport(f *testing.F) {
	for _, h := range hostileLines() {
		f.Add([]byte(h.line + "\n"))
	}
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"}]`,
		`{"jsonrpc":"2.0","id":4,"result":{}}`,
		`{"jsonrpc":"2.0","id":"s","method":"nope"}` + "\n\n" + `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":5}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":` + strings.Repeat(`{"a":`, 999) + `1` + strings.Repeat(`}`, 999) + `}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 70<<10) + `"}}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}\r",
	} {
		f.Add([]byte(seed + "\n"))
	}
	s := New(newFakeTools(desc("echo")), Options{Logger: slog.New(slog.DiscardHandler)})
	defer s.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
		want := 0
		for _, l := range lines {
			want += repliesExpected(l)
		}
		c := newRawClient(t, s, 64<<10)
		c.patience = 10 * time.Second
		c.initialize()
		// Written while the replies are read, as a client must: the server
		// stops reading when nobody reads what it writes.
		wrote := make(chan error, 1)
		go func() {
			var err error
			for _, l := range lines {
				if _, err = c.in.Write(append(l, '\n')); err != nil {
					break
				}
			}
			wrote <- err
		}()
		got := 0
		written := false
		for !written || got < want {
			select {
			case err := <-wrote:
				if err != nil {
					t.Fatalf("write: %v", err)
				}
				written = true
			case line, ok := <-c.lines:
				if !ok {
					t.Fatal("the server closed its output")
				}
				got += countReplies(t, line)
			case <-time.After(c.patience):
				t.Fatalf("%d replies of %d expected after %d lines (written: %v)", got, want, len(lines), written)
			}
		}
		c.send(`{"jsonrpc":"2.0","id":` + pingID + `,"method":"ping"}`)
		for {
			line := c.next()
			if strings.Contains(line, pingID) {
				if r := parseReply(t, line); r.Error != nil || string(r.ID) != pingID {
					t.Fatalf("the final ping failed: %s", line)
				}
				break
			}
			countReplies(t, line)
		}
	})
}

// repliesExpected is an oracle independent of the guard: how many replies a
// line must get at least. A batch may get one or none.
func repliesExpected(line []byte) int {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] == '[' && json.Valid(line) {
		return 0
	}
	var m map[string]json.RawMessage
	if len(line) > 64<<10 || !json.Valid(line) || json.Unmarshal(line, &m) != nil {
		return 1
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return 1
	}
	if depth, _ := nestingWithin(line, maxNesting); depth > maxNesting {
		return 1
	}
	id, hasID := m["id"]
	method, hasMethod := m["method"]
	switch {
	case hasMethod && !hasID:
		var s string
		if json.Unmarshal(method, &s) == nil {
			return 0 // a notification
		}
	case !hasMethod && hasID:
		if _, r := idKey(id); r == nil {
			return 0 // a response to a request of the server's, or to none
		}
	}
	return 1
}

// countReplies checks that line is a JSON-RPC message or batch, and returns
// how many replies (responses not to the final ping) it is.
func countReplies(t *testing.T, line string) int {
	t.Helper()
	b := bytes.TrimSpace([]byte(line))
	if len(b) > 0 && b[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(b, &batch); err != nil {
			t.Fatalf("output is not a JSON-RPC batch: %v: %.300s", err, line)
		}
		return 0
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || string(m["jsonrpc"]) != `"2.0"` {
		t.Fatalf("output is not a JSON-RPC message: %v: %.300s", err, line)
	}
	if _, ok := m["method"]; ok {
		return 0 // a notification or a request of the server's
	}
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if hasResult == hasError {
		t.Fatalf("a response needs exactly one of result and error: %.300s", line)
	}
	return 1
}

// FuzzHTTPBody posts arbitrary bytes to /mcp, at both protocol generations.
// Invariants: nothing panics, no body is a server error (5xx), and every
// refusal of the guard is one JSON-RPC error response.
func FuzzHTTPBody(f *testing.F) {
	for _, h := range hostileLines() {
		f.Add([]byte(h.line), false)
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), true)
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`), false)
	s := New(newFakeTools(desc("echo")), Options{Logger: slog.New(slog.DiscardHandler)})
	defer s.Close()
	const max = 64 << 10
	h := s.Handler(HTTPOptions{MaxRequestBytes: max})
	f.Fuzz(func(t *testing.T, body []byte, stateless bool) {
		req := httptest.NewRequest(http.MethodPost, PathMCP, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if stateless {
			req.Header.Set("Mcp-Protocol-Version", firstStatelessVersion)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx))
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		if len(body) > max {
			if r := parseReply(t, rec.Body.String()); rec.Code != http.StatusRequestEntityTooLarge || r.Error == nil || r.Error.Code != -32600 {
				t.Fatalf("a body over the bound got %d: %s", rec.Code, rec.Body)
			}
		} else if _, refused := inspect(body); refused != nil {
			if r := parseReply(t, rec.Body.String()); r.Error == nil || r.Error.Code != refused.code {
				t.Fatalf("refusal is not the JSON-RPC error %d: %s", refused.code, rec.Body)
			}
		}
	})
}
