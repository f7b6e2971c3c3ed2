package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools of the stdio test, and the limit that makes loop fail fast.
var (
	stdioTools  = []string{"echo", "loop", "panic", "stdoutflood"}
	stdioLimits = "loop: {timeout: 300ms}"
)

// TestStdio drives `warden serve` over stdio with the go-sdk client, at both
// protocol generations: the 2025-11-25 initialize handshake and the
// 2026-07-28 server/discover one.
func TestStdio(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(protocol, func(t *testing.T) {
			e := newEnv(t, stdioLimits, stdioTools...)
			cs, _ := stdioServer(t, e, protocol, nil)

			init := cs.InitializeResult()
			if init.ProtocolVersion != protocol {
				t.Errorf("negotiated protocol %q, want %q", init.ProtocolVersion, protocol)
			}
			if init.ServerInfo == nil || init.ServerInfo.Name != "warden" {
				t.Errorf("serverInfo = %s, want name warden", dump(init.ServerInfo))
			}
			if c := init.Capabilities; c == nil || c.Tools == nil || !c.Tools.ListChanged || c.Logging == nil {
				t.Errorf("capabilities = %s, want tools.listChanged and logging", dump(c))
			}

			checkToolList(t, cs)
			wantEcho(t, cs, "hello, warden")

			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
			wantInvalidParams(t, err)
			wantEcho(t, cs, "after an unknown tool")

			start := time.Now()
			wantFailure(t, call(t, cs, "loop", nil), "timeout")
			t.Logf("loop with a 300ms timeout failed after %v", time.Since(start))
			wantEcho(t, cs, "after a timeout")

			res := call(t, cs, "panic", nil)
			wantFailure(t, res, "failed")
			if got := text(t, res); !strings.Contains(got, "fixture panic") {
				t.Errorf("panic's message %q does not carry the panic value", got)
			}
			wantEcho(t, cs, "after a panic")

			// 10 MiB to the guest's stdout and stderr: if one byte reached
			// warden's stdout, the client's decoder would fail here.
			res = call(t, cs, "stdoutflood", nil)
			if res.IsError || text(t, res) != "ok" {
				t.Fatalf("stdoutflood: %s", dump(res))
			}
			wantEcho(t, cs, "after a flood")
		})
	}
}

// checkToolList checks tools/list against the fixtures' descriptors.
func checkToolList(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	var tools []*mcp.Tool
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		tools = append(tools, tl)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, sorted(stdioTools...)) {
		t.Fatalf("tools/list names = %v, want %v (sorted)", names, sorted(stdioTools...))
	}
	echo := tools[slices.Index(names, "echo")]
	if echo.Title != "Echo" || !strings.HasPrefix(echo.Description, "Returns the given text unchanged.") {
		t.Errorf("echo title/description = %q / %q", echo.Title, echo.Description)
	}
	sameJSON(t, "echo inputSchema", echo.InputSchema,
		`{"type":"object","properties":{"text":{"type":"string","description":"The text to return."}},"required":["text"],"additionalProperties":false}`)
	sameJSON(t, "echo outputSchema", echo.OutputSchema,
		`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
	if a := echo.Annotations; a == nil || !a.ReadOnlyHint || !a.IdempotentHint {
		t.Errorf("echo annotations = %s, want readOnlyHint and idempotentHint", dump(a))
	}
	sameJSON(t, "echo _meta", echo.Meta, `{"warden/version":"1.0.0","warden/category":"utility"}`)
	loop := tools[slices.Index(names, "loop")]
	sameJSON(t, "loop inputSchema", loop.InputSchema, `{"type":"object"}`)
	if loop.OutputSchema != nil || loop.Annotations != nil || len(loop.Meta) != 0 || loop.Title != "" {
		t.Errorf("loop has fields its descriptor does not: %s", dump(loop))
	}
}

// sameJSON compares got, marshalled, with the JSON want, ignoring key order.
func sameJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	raw, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var g, w any
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", what, err)
	}
	if dump(g) != dump(w) {
		t.Errorf("%s = %s, want %s", what, raw, want)
	}
}

// TestStdioRawProtocolOnly runs the binary without an SDK in between and
// reads its stdout byte for byte while a tool floods its own stdout: every
// line must be one JSON-RPC 2.0 message, and there must be nothing else.
func TestStdioRawProtocolOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo", "stdoutflood")
	stderr := &logBuffer{}
	dumpOnFailure(t, "warden serve (raw stdio)", stderr)
	cmd := exec.Command(built.warden, "serve", "--config", e.config)
	cmd.Env = childEnv()
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait closes the stdout pipe once the process has exited, so it must
	// not run before the reader below has read to EOF: called at once, it
	// races the last read ("file already closed" instead of io.EOF).
	readDone := make(chan struct{})
	exited := make(chan error, 1)
	go func() { <-readDone; exited <- cmd.Wait() }()
	lines := make(chan string)
	defer func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			for range lines { // let the reader reach EOF
			}
			<-exited
		}
	}()

	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatalf("write to warden's stdin: %v", err)
		}
	}
	type message struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	readErr := make(chan error, 1)
	var total int
	go func() {
		defer close(readDone)
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadString('\n')
			total += len(line)
			if line != "" {
				lines <- line
			}
			if err != nil {
				readErr <- err
				close(lines)
				return
			}
		}
	}()
	// next reads the next line, which must be a JSON-RPC message.
	next := func() message {
		t.Helper()
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("warden closed stdout early: %v", <-readErr)
			}
			var m message
			dec := json.NewDecoder(strings.NewReader(line))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&m); err != nil || m.JSONRPC != "2.0" || dec.More() {
				t.Fatalf("stdout line is not a JSON-RPC 2.0 message (%v): %.200q", err, line)
			}
			if !strings.HasSuffix(line, "}\n") {
				t.Fatalf("stdout line has bytes after the message: %.200q", line)
			}
			return m
		case <-time.After(time.Minute):
			t.Fatal("no message from warden within a minute")
		}
		panic("unreachable")
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	m := next()
	for m.Method != "" {
		// A module that finishes loading meanwhile sends list_changed, which
		// may come first; it was checked to be JSON-RPC like every line.
		m = next()
	}
	if string(m.ID) != "1" || m.Result == nil {
		t.Fatalf("initialize: %s", dump(m))
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stdoutflood","arguments":{}}}`)
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`)
	results := map[string]string{}
	for len(results) < 2 {
		m := next()
		if m.Method != "" {
			continue // a notification; allowed, and already checked to be JSON-RPC
		}
		results[string(m.ID)] = string(m.Result)
	}
	// Results carry warden's own _meta (duration, fuel); the rest is exact.
	for id, want := range map[string]string{
		"2": `{"content":[{"type":"text","text":"ok"}]}`,
		"3": `{"content":[{"type":"text","text":"still here"}],"structuredContent":{"text":"still here"}}`,
	} {
		var r map[string]json.RawMessage
		if err := json.Unmarshal([]byte(results[id]), &r); err != nil {
			t.Fatalf("result %s: %v", id, err)
		}
		delete(r, "_meta")
		if got := dump(r); got != want {
			t.Errorf("result %s = %s, want %s (without _meta)", id, got, want)
		}
	}

	// EOF on stdin ends the session; warden exits 0 and writes nothing more.
	stdin.Close()
	for line := range lines {
		t.Errorf("stdout after the last response: %.200q", line)
	}
	if err := <-readErr; err != io.EOF {
		t.Errorf("reading stdout: %v", err)
	}
	if err := <-exited; err != nil {
		t.Errorf("warden serve exited with %v after stdin closed", err)
	}
	exited <- nil // for the deferred check
	t.Logf("stdout carried %d bytes in total while the guest wrote 10 MiB to its stdout", total)
	if total > 4096 {
		t.Errorf("stdout carried %d bytes for three small responses", total)
	}
}
