package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Hostile clients (issue 11): no line or body a client sends, and no way it
// paces its bytes, takes `warden serve` down or keeps it from serving others.

// hostileLine is one message that used to end `warden serve`, and the
// JSON-RPC error it must now be answered with.
type hostileLine struct {
	name string
	line string
	code int64
	id   string // the error's id, byte for byte
}

func hostileLines() []hostileLine {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	return []hostileLine{
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,"method":`, -32700, "null"},
		{"not JSON", `GET / HTTP/1.1`, -32700, "null"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, "null"},
		{"array id", `{"jsonrpc":"2.0","id":[1,2],"method":"ping"}`, -32600, "null"},
		{"id 1e400", `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, -32600, "1e400"},
		{"30-digit id", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`, -32600, "123456789012345678901234567890"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, -32600, "7"},
		{"100k-deep nesting", deep, -32700, "null"},
	}
}

// rawStdio is `warden serve` over stdio, driven byte by byte.
type rawStdio struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startRawStdio(t *testing.T, e *env) *rawStdio {
	t.Helper()
	return startRawStdioWith(t, e, `{}`)
}

// startRawStdioWith is startRawStdio for a client that declares
// capabilities (a JSON object).
func startRawStdioWith(t *testing.T, e *env, capabilities string) *rawStdio {
	t.Helper()
	stderr := &logBuffer{}
	dumpOnFailure(t, "warden serve (raw stdio)", stderr)
	cmd := exec.Command(built.warden, "serve", "--config", e.config)
	cmd.Env = childEnv()
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &rawStdio{t: t, cmd: cmd, in: in, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 32<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("warden serve did not exit cleanly after stdin closed: %v", err)
			}
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			t.Errorf("warden serve still running 2 min after stdin closed; killed")
		}
	})
	s.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + capabilities + `,"clientInfo":{"name":"raw","version":"1"}}}`)
	if r := s.reply(); r.Error != nil || string(r.ID) != `"init"` {
		t.Fatalf("initialize: %+v", r)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *rawStdio) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("write to warden's stdin: %v", err)
	}
}

func (s *rawStdio) next() string {
	s.t.Helper()
	select {
	case line, ok := <-s.lines:
		if !ok {
			s.t.Fatal("warden serve closed its stdout (exited?)")
		}
		return line
	case <-time.After(2 * time.Minute):
		s.t.Fatal("no line from warden serve")
	}
	return ""
}

// rawReply is a JSON-RPC message with its id kept as written.
type rawReply struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func parseRaw(t *testing.T, line string) rawReply {
	t.Helper()
	var r rawReply
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("not JSON: %v: %.300s", err, line)
	}
	return r
}

// reply returns the next response, skipping notifications.
func (s *rawStdio) reply() rawReply {
	s.t.Helper()
	for {
		if r := parseRaw(s.t, s.next()); r.Method == "" {
			return r
		}
	}
}

func wantRawError(t *testing.T, r rawReply, code int64, id string) {
	t.Helper()
	if r.Error == nil || r.Error.Code != code || string(r.ID) != id {
		t.Fatalf("want JSON-RPC error %d with id %s, got id %s error %+v result %.200s", code, id, r.ID, r.Error, r.Result)
	}
}

// wantEchoRaw calls echo with id on the raw connection.
func (s *rawStdio) wantEchoRaw(id string) {
	s.t.Helper()
	s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`)
	r := s.reply()
	if r.Error != nil || string(r.ID) != id || !strings.Contains(string(r.Result), `"still here"`) || strings.Contains(string(r.Result), `"isError":true`) {
		s.t.Fatalf("echo %s after a hostile line: id %s error %+v result %.300s", id, r.ID, r.Error, r.Result)
	}
}

func (s *rawStdio) running() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		s.t.Fatalf("warden serve is not running: %v", err)
	}
}

func TestHostileStdioLines(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "busy: {timeout: 15s}", "echo", "busy")
	s := startRawStdio(t, e)
	// A call in flight while the hostile lines arrive: busy reports
	// progress once it runs, then sleeps until its 15 s timeout (ample time
	// for what follows; if not, the test says so instead of passing).
	s.send(`{"jsonrpc":"2.0","id":"inflight","method":"tools/call","params":{"name":"busy","arguments":{"mode":"sleep"},"_meta":{"progressToken":"p"}}}`)
	for {
		if r := parseRaw(t, s.next()); r.Method == "notifications/progress" {
			break
		}
	}
	// The duplicate of the call in flight is refused; the call is not lost.
	s.send(`{"jsonrpc":"2.0","id":"inflight","method":"tools/call","params":{"name":"echo","arguments":{"text":"dup"}}}`)
	wantRawError(t, s.reply(), -32600, `"inflight"`)
	for i, h := range hostileLines() {
		s.send(h.line)
		r := s.reply()
		if string(r.ID) == `"inflight"` {
			t.Fatalf("%s: the in-flight call finished before the hostile lines were answered (raise busy's timeout)", h.name)
		}
		wantRawError(t, r, h.code, h.id)
		s.running()
		s.wantEchoRaw(strconv.Itoa(100 + i))
	}
	r := s.reply()
	if string(r.ID) != `"inflight"` || r.Error != nil || !strings.Contains(string(r.Result), `"timeout"`) {
		t.Fatalf("the call in flight did not get its own reply (a timeout result): id %s %+v %.300s", r.ID, r.Error, r.Result)
	}
	// Answered, its id can be used again; a 2^53 id comes back as sent.
	s.wantEchoRaw(`"inflight"`)
	s.wantEchoRaw("9007199254740992")
}

func TestHostileStdioHugeLineIsBoundedInMemory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo")
	appendConfig(t, e, "server:\n  max_message: 1MiB\n")
	s := startRawStdio(t, e)
	s.wantEchoRaw("1")
	// Reset the peak to the current resident set, so that the start-up peak
	// cannot hide the line's.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.cmd.Process.Pid), []byte("5"), 0); err != nil {
		t.Logf("cannot reset the peak RSS (%v); comparing with the start-up peak", err)
	}
	before := vmHWM(t, s.cmd.Process.Pid)
	const size = 50 << 20
	huge := `{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
		strings.Repeat("x", size) + `"}}}`
	go io.WriteString(s.in, huge+"\n") // warden reads as it is written
	r := s.reply()
	wantRawError(t, r, -32600, `"huge"`)
	if want := fmt.Sprintf("message of %d bytes", len(huge)); !strings.Contains(r.Error.Message, want) {
		t.Errorf("the refusal does not say what was dropped (%s): %s", want, r.Error.Message)
	}
	after := vmHWM(t, s.cmd.Process.Pid)
	t.Logf("peak RSS (VmHWM) %d KiB before the %d MiB line, %d KiB after (+%d KiB; bound server.max_message = 1 MiB)",
		before, size>>20, after, after-before)
	if after-before > size/2>>10 {
		t.Errorf("peak RSS grew by %d KiB for a %d MiB line: it was buffered", after-before, size>>20)
	}
	s.wantEchoRaw("2")
}

func TestHostileStdioIDsEchoedExactly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo")
	s := startRawStdio(t, e)
	// Ids the go-sdk alone would mangle are refused with the id as sent...
	for _, id := range []string{"123456789012345678901234567890", "9007199254740993", "1.0", "-0"} {
		s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		wantRawError(t, s.reply(), -32600, id)
	}
	// ...and the ones it keeps come back byte for byte.
	for _, id := range []string{"0", "-9007199254740992", `"a\"b"`, `"123456789012345678901234567890"`} {
		s.wantEchoRaw(id)
	}
}

// appendConfig adds YAML to e's config file.
func appendConfig(t *testing.T, e *env, yaml string) {
	t.Helper()
	f, err := os.OpenFile(e.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(yaml); err != nil {
		t.Fatal(err)
	}
}

// vmHWM is a process's peak resident set, in KiB.
func vmHWM(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Skip("no VmHWM in /proc status")
	return 0
}

// postRaw POSTs body to warden's /mcp and returns the status and the reply
// (the first event's data, when it is an event stream).
func postRaw(t *testing.T, url, protocol, session, body string) (int, http.Header, rawReply) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if protocol != "" {
		req.Header.Set("Mcp-Protocol-Version", protocol)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var data string
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id"`) {
				data = d
				break
			}
		}
	} else {
		data = readAll(resp.Body)
	}
	var r rawReply
	if resp.StatusCode != http.StatusAccepted {
		r = parseRaw(t, data)
	}
	return resp.StatusCode, resp.Header, r
}

func TestHostileHTTPBodies(t *testing.T) {
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
	for _, gen := range []struct{ protocol, session string }{{"2025-11-25", session}, {"2026-07-28", ""}} {
		for _, h := range hostileLines() {
			status, _, r := postRaw(t, url, gen.protocol, gen.session, h.line)
			if status != http.StatusBadRequest {
				t.Errorf("%s %s: status %d, want 400", gen.protocol, h.name, status)
			}
			wantRawError(t, r, h.code, h.id)
		}
		// Too large: 413, with the id.
		big := `{"jsonrpc":"2.0","id":"big","method":"ping","params":{"x":"` + strings.Repeat("x", 17<<20) + `"}}`
		status, _, r := postRaw(t, url, gen.protocol, gen.session, big)
		if status != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: 17 MiB body: status %d, want 413", gen.protocol, status)
		}
		wantRawError(t, r, -32600, `"big"`)
	}
	// The session goes on, and so do new clients at either generation.
	status, _, r := postRaw(t, url, "2025-11-25", session, `{"jsonrpc":"2.0","id":9007199254740992,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`)
	if status != http.StatusOK || r.Error != nil || string(r.ID) != "9007199254740992" || !strings.Contains(string(r.Result), "still here") {
		t.Fatalf("echo in the session after hostile bodies: %d %s %+v %.200s", status, r.ID, r.Error, r.Result)
	}
	for _, protocol := range []string{"2025-11-25", ""} {
		wantEcho(t, srv.connect(t, protocol, nil, nil), "after hostile bodies")
	}
}

// dribbler is a raw connection that sent a POST's headers and one byte of
// its 1000-byte body, and then nothing.
func dribbler(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{")
	return c
}

// serverClosed reads c until the server closes it and returns what it sent.
func serverClosed(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(2 * time.Minute)) // patience, not an assertion
	b, err := io.ReadAll(c)
	if err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("the server did not close a stalled connection: %v", err)
	}
	return string(b)
}

func wantHealthz(t *testing.T, srv *httpServer) {
	t.Helper()
	resp, err := http.Get("http://" + srv.addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %s", resp.Status)
	}
}

// TestHostileSlowlorisAtTheCap: 64 connections stall their bodies against a
// cap of 32 with no effective body timeout. The server evicts the stalest,
// and /healthz and real sessions are served while the rest stay open.
func TestHostileSlowlorisAtTheCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo")
	appendConfig(t, e, "server:\n  max_connections: 32\n  body_timeout: 1h\n  header_timeout: 1h\n")
	srv := startHTTP(t, e)
	live := srv.connect(t, "2025-11-25", nil, nil) // its event stream is open throughout
	var stalled []net.Conn
	for range 64 {
		stalled = append(stalled, dribbler(t, srv.addr))
	}
	for _, c := range stalled[:32] {
		serverClosed(t, c)
	}
	wantHealthz(t, srv)
	wantEcho(t, live, "live session at the cap")
	wantEcho(t, srv.connect(t, "", nil, nil), "new stateless client at the cap")
	wantEcho(t, srv.connect(t, "2025-11-25", nil, nil), "new session at the cap")
	// An eviction is logged as its connection closes, maybe just after
	// the client saw the close: wait for the lines.
	eventually(t, "at least 32 evictions logged", func() bool {
		return len(srv.stderr.lines("connection evicted")) >= 32
	})
}

// TestHostileSlowBodiesTimedOut: with a short body timeout every stalled
// body is answered 408 and its connection closed.
func TestHostileSlowBodiesTimedOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo")
	appendConfig(t, e, "server:\n  body_timeout: 200ms\n")
	srv := startHTTP(t, e)
	var stalled []net.Conn
	for range 64 {
		stalled = append(stalled, dribbler(t, srv.addr))
	}
	wantHealthz(t, srv)
	wantEcho(t, srv.connect(t, "", nil, nil), "while bodies stall")
	for _, c := range stalled {
		if got := serverClosed(t, c); !strings.HasPrefix(got, "HTTP/1.1 408") {
			t.Fatalf("a stalled body got %.200q, want 408", got)
		}
	}
	wantEcho(t, srv.connect(t, "2025-11-25", nil, nil), "after the stalled bodies")
}
