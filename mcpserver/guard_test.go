package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/tool"
)

// hostile is one line a client may send that the go-sdk alone would end the
// connection on, with the JSON-RPC error the server must answer it with.
type hostile struct {
	name string
	line string
	code int64
	id   string // the id the error must carry, byte for byte
}

// hostileLines are the lines of issue 11, and their neighbours.
func hostileLines() []hostile {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	return []hostile{
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,"method":`, -32700, "null"},
		{"not JSON", `hello, server`, -32700, "null"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, "null"},
		{"array id", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, -32600, "null"},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, -32600, "null"},
		{"boolean id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, -32600, "null"},
		{"id 1e400", `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, -32600, "1e400"},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, "1.5"},
		{"30-digit id", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, -32600, "123456789012345678901234567890"},
		{"id past 2^53", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, -32600, "9007199254740993"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, -32600, "7"},
		{"no jsonrpc", `{"id":"x","method":"ping"}`, -32600, `"x"`},
		{"method not a string", `{"jsonrpc":"2.0","id":"m","method":5}`, -32600, `"m"`},
		{"two ids", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, -32600, "null"},
		{"escaped id key", `{"jsonrpc":"2.0","\u0069d":1e400,"method":"ping"}`, -32600, "1e400"},
		{"lone surrogate id", `{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`, -32600, `"\ud800"`},
		{"not an object", `42`, -32600, "null"},
		{"empty batch", `[]`, -32600, "null"},
		{"100k-deep nesting", deep, -32700, "null"},
		{"deep params, id first", `{"jsonrpc":"2.0","id":9,"method":"ping","params":` + deep + `}`, -32700, "9"},
	}
}

// rawClient drives a Server over a GuardedTransport with raw lines.
type rawClient struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan string
	// patience bounds each wait for the server; not an assertion on speed.
	patience time.Duration
}

func newRawClient(t *testing.T, s *Server, maxMessage int) *rawClient {
	t.Helper()
	return newRawClientOver(t, s, &GuardedTransport{MaxMessage: maxMessage})
}

// newRawClientOver is newRawClient over tr, whose Reader and Writer it sets.
func newRawClientOver(t *testing.T, s *Server, tr *GuardedTransport) *rawClient {
	t.Helper()
	return newRawClientServed(t, func(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
		tr.Reader, tr.Writer = r, w
		return s.Serve(ctx, tr)
	})
}

// newRawClientServed is a raw client of the session serve runs over the
// client's pipes.
func newRawClientServed(t *testing.T, serve func(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error) *rawClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, inR, outW)
		outW.Close()
	}()
	c := &rawClient{t: t, in: inW, lines: make(chan string, 64), patience: time.Minute}
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(c.patience):
			t.Errorf("Serve did not return after its input closed")
		}
	})
	return c
}

func (c *rawClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// next returns the next line the server wrote.
func (c *rawClient) next() string {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatal("the server closed its output")
		}
		return line
	case <-time.After(c.patience):
		c.t.Fatal("no reply")
	}
	return ""
}

// reply is a raw JSON-RPC response, its id kept as written.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func parseReply(t *testing.T, line string) reply {
	t.Helper()
	var r reply
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("reply is not JSON: %v: %.200s", err, line)
	}
	return r
}

// wantError checks that line is a JSON-RPC error with code and exactly id.
func wantError(t *testing.T, line string, code int64, id string) {
	t.Helper()
	r := parseReply(t, line)
	if r.Error == nil || r.Error.Code != code || string(r.ID) != id {
		t.Fatalf("want error %d with id %s, got %.300s", code, id, line)
	}
}

const initLine = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func (c *rawClient) initialize() {
	c.t.Helper()
	c.send(initLine)
	if r := parseReply(c.t, c.next()); r.Error != nil || string(r.ID) != `"init"` {
		c.t.Fatalf("initialize failed: %+v", r)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// wantEchoCall makes a tools/call to echo with id and checks its reply.
func (c *rawClient) wantEchoCall(id string) {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`)
	line := c.next()
	r := parseReply(c.t, line)
	if r.Error != nil || string(r.ID) != id || !strings.Contains(string(r.Result), "called echo") {
		c.t.Fatalf("echo call %s: %.300s", id, line)
	}
}

func TestGuardAnswersEveryHostileLineAndGoesOn(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("echo")), Options{})
	c := newRawClient(t, s, 0)
	c.initialize()
	for i, h := range hostileLines() {
		t.Run(h.name, func(t *testing.T) {
			c.t = t
			c.send(h.line)
			wantError(t, c.next(), h.code, h.id)
			c.wantEchoCall(fmt.Sprint(100 + i))
		})
	}
}

func TestGuardRefusesALineTooLongWithoutHoldingIt(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("echo")), Options{})
	const max = 4 << 10
	c := newRawClient(t, s, max)
	c.initialize()
	long := `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
		strings.Repeat("x", 1<<20) + `"}}}`
	c.send(long)
	line := c.next()
	wantError(t, line, -32600, `"big"`)
	if want := fmt.Sprintf("message of %d bytes", len(long)); !strings.Contains(line, want) || !strings.Contains(line, "server.max_message") {
		t.Errorf("refusal does not say what was dropped (%q) and which setting bounds it: %s", want, line)
	}
	c.wantEchoCall("2")
}

func TestGuardRefusesADuplicateIDInFlight(t *testing.T) {
	tools, started, release := slowTools()
	s, _ := newServer(t, tools, Options{})
	c := newRawClient(t, s, 0)
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	<-started
	// The bad line and the duplicate arrive while call 5 runs.
	c.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	wantError(t, c.next(), -32600, "5")
	c.send(`not json`)
	wantError(t, c.next(), -32700, "null")
	c.wantEchoCall(`"other"`)
	close(release)
	r := parseReply(t, c.next())
	if string(r.ID) != "5" || r.Error != nil || !strings.Contains(string(r.Result), "called slow") {
		t.Fatalf("the call in flight lost its reply: %+v", r)
	}
	// Answered, the id is free again.
	c.wantEchoCall("5")
}

func TestGuardEchoesIDsExactly(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("echo")), Options{})
	c := newRawClient(t, s, 0)
	c.initialize()
	for _, id := range []string{"9007199254740992", "-9007199254740992", "0", `"ü\"x"`, `""`} {
		c.wantEchoCall(id)
	}
}

func TestGuardRefusesABadBatchWhole(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("echo")), Options{})
	c := newRawClient(t, s, 0)
	c.initialize()
	c.send(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`)
	wantError(t, c.next(), -32600, "null")
	c.send(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"1.0","id":2,"method":"ping"}]`)
	wantError(t, c.next(), -32600, "null")
	c.wantEchoCall("3")
}

func TestNestingWithin(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		seen int
	}{
		{`{}`, true, 1},
		{`[[["]]]]]]"]]]`, true, 3},
		{`{"a":"\"[[[["}`, true, 1},
		{strings.Repeat("[", 4), false, 4},
	} {
		seen, ok := nestingWithin([]byte(tc.in), 3)
		if ok != tc.ok || seen != tc.seen {
			t.Errorf("nestingWithin(%s, 3) = %d, %v; want %d, %v", tc.in, seen, ok, tc.seen, tc.ok)
		}
	}
}

func TestSalvageIDFromAPrefix(t *testing.T) {
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","id":12,"params":{"x":"`: "12",
		`{"params":{"a":[1,{"id":3}]},"id":"s","x`: `"s"`,
		`{"id":{"a":1},"method":"`:                 "",
		`{"id":12`:                                 "", // the number may go on
		`["id",1]`:                                 "",
	} {
		if got := string(salvageID([]byte(in))); got != want {
			t.Errorf("salvageID(%s) = %q, want %q", in, got, want)
		}
	}
}

// TestGuardRefusesBatches: MCP has no batches since 2025-06-18; a batch,
// valid or not, is refused whole, and the connection goes on.
func TestGuardRefusesBatches(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("echo")), Options{})
	c := newRawClient(t, s, 0)
	c.initialize()
	c.send(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	line := c.next()
	wantError(t, line, -32600, "null")
	if !strings.Contains(line, "batches are not supported") {
		t.Fatalf("refusal: %s", line)
	}
	c.wantEchoCall("3")
}

// TestGuardBoundsPendingRequests: past MaxPending requests not answered yet,
// the next one is refused at once with its id (-32000), not queued; once
// the calls in flight are answered, the connection takes requests again.
func TestGuardBoundsPendingRequests(t *testing.T) {
	tools, started, release := slowTools()
	s, _ := newServer(t, tools, Options{})
	c := newRawClientOver(t, s, &GuardedTransport{MaxPending: 2})
	c.initialize()
	for id := range 2 {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow","arguments":{}}}`, id))
		<-started
	}
	c.send(`{"jsonrpc":"2.0","id":"third","method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	line := c.next()
	wantError(t, line, -32000, `"third"`)
	if !strings.Contains(line, "2 requests of this connection are not answered yet") {
		t.Fatalf("refusal: %s", line)
	}
	close(release)
	for range 2 {
		if r := parseReply(t, c.next()); r.Error != nil {
			t.Fatalf("a call in flight failed: %+v", r)
		}
	}
	c.wantEchoCall(`"fourth"`)
}

// slowTools serves echo and slow; each call of slow signals started, then
// waits until release is closed.
func slowTools() (tools *fakeTools, started, release chan struct{}) {
	tools = newFakeTools(desc("echo"), desc("slow"))
	release = make(chan struct{})
	started = make(chan struct{}, 8)
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		if c.Name == "slow" {
			started <- struct{}{}
			<-release
		}
		return &tool.Result{Content: []tool.Content{tool.TextContent("called " + c.Name)}}, nil
	})
	return tools, started, release
}
