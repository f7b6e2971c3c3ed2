package serve

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client that ends a session (issue 26): a resources/read whose URI holds
// a control character made the go-sdk build a resource-not-found error
// whose data (the URI quoted with Go's %q, "\x01") is not JSON. The reply
// could not be encoded, the go-sdk took that for a broken transport, and
// `warden serve` exited (stdio) or the session died (HTTP). Now the client
// gets the error, without the data that cannot be sent, and the session
// goes on.

// unencodableRequests are requests, by id, whose reply the go-sdk cannot
// encode, each with the error it must be answered with.
var unencodableRequests = []struct {
	id, method, params string
	code               int64
	message            string
}{
	{`"read"`, "resources/read", `{"uri":"file:///x\u0001y"}`, int64(mcp.CodeResourceNotFound), "Resource not found"},
	{`"read-astral"`, "resources/read", `{"uri":"x\udb40\udc01"}`, int64(mcp.CodeResourceNotFound), "Resource not found"},
	{`"subscribe"`, "resources/subscribe", `{"uri":"x\u0007"}`, int64(mcp.CodeResourceNotFound), "Resource not found"},
}

func (r rawReply) errorIs(code int64, message string) bool {
	return r.Error != nil && r.Error.Code == code && r.Error.Message == message
}

func TestUnencodableReplyStdio(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo")
	s := startRawStdio(t, e)
	for i, req := range unencodableRequests {
		s.send(`{"jsonrpc":"2.0","id":` + req.id + `,"method":"` + req.method + `","params":` + req.params + `}`)
		line := s.next()
		r := parseRaw(t, line)
		for r.Method != "" { // a notification (the background load's tools/list_changed)
			line = s.next()
			r = parseRaw(t, line)
		}
		if string(r.ID) != req.id || !r.errorIs(req.code, req.message) || strings.Contains(line, `"data"`) {
			t.Fatalf("%s %s: want error %d %q without data, got %s", req.method, req.params, req.code, req.message, line)
		}
		s.running()
		s.send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
		if r := s.reply(); r.Error != nil || string(r.ID) != `"ping"` || string(r.Result) != "{}" {
			t.Fatalf("ping after %s: %+v %s", req.method, r.Error, r.Result)
		}
		s.wantEchoRaw(strings.Repeat("1", i+1))
	}
}

func TestUnencodableReplyHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo")
	srv := startHTTP(t, e)
	url := srv.url()
	status, h, _ := postRaw(t, url, "", "", `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	session := h.Get("Mcp-Session-Id")
	if status != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d, session %q", status, session)
	}
	if status, _, _ := postRaw(t, url, "2025-11-25", session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("initialized: %d", status)
	}
	for i, req := range unencodableRequests {
		status, _, r := postRaw(t, url, "2025-11-25", session, `{"jsonrpc":"2.0","id":`+req.id+`,"method":"`+req.method+`","params":`+req.params+`}`)
		if status != http.StatusOK || string(r.ID) != req.id || !r.errorIs(req.code, req.message) {
			t.Fatalf("%s %s: want error %d %q, got %d %s %+v", req.method, req.params, req.code, req.message, status, r.ID, r.Error)
		}
		// The same session answers a ping and a tools/call.
		status, _, r = postRaw(t, url, "2025-11-25", session, `{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
		if status != http.StatusOK || r.Error != nil || string(r.Result) != "{}" {
			t.Fatalf("ping in the session after %s: %d %+v %s", req.method, status, r.Error, r.Result)
		}
		id := strings.Repeat("7", i+1)
		status, _, r = postRaw(t, url, "2025-11-25", session, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`)
		if status != http.StatusOK || r.Error != nil || string(r.ID) != id || !strings.Contains(string(r.Result), "still here") {
			t.Fatalf("echo in the session after %s: %d %+v %.200s", req.method, status, r.Error, r.Result)
		}
	}
	// The operator learns what was dropped, escaped: the client's control
	// characters do not reach the terminal raw.
	if lines := srv.stderr.lines("the error data of a reply is not valid JSON", "method=resources/read"); len(lines) == 0 {
		t.Errorf("the dropped error data is not logged")
	}
	if strings.ContainsAny(srv.stderr.String(), "\x01\x07\U000e0001") {
		t.Errorf("the log carries the client's control characters raw")
	}
	// And a go-sdk client (stateless, 2026-07-28) gets the error too.
	cs := srv.connect(t, "", nil, nil)
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///x\U000e0001"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != mcp.CodeResourceNotFound {
		t.Fatalf("resources/read of a URI with an invisible character: %v", err)
	}
	wantEcho(t, cs, "after it")
}
