package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/tool"
)

// BenchmarkHTTPFirstCall times what a new 2025-11-25 session costs up to
// its first answer: initialize, notifications/initialized and a first
// tools/call of echo, each a POST from a real net/http client to a real
// listener on loopback (keep-alive, as a client opening many sessions
// has). Closing the session (DELETE) is not timed. The tool answers at
// once, so what is measured is the server's session path. It reports the
// median and p90 of the three requests together.
//
// With BENCH_MCP_URL set it times that server instead: a `warden serve
// --http` of the bundled echo tool, say, for the whole path with the
// sandbox (docs/performance.md, "A new HTTP session's first call").
//
//	go test ./mcpserver -run '^$' -bench HTTPFirstCall -count 6
func BenchmarkHTTPFirstCall(b *testing.B) {
	url := os.Getenv("BENCH_MCP_URL")
	if url == "" {
		tools := newFakeTools(desc("echo"))
		tools.setCall(func(_ context.Context, c Call) (*tool.Result, error) {
			var args struct{ Text string }
			if err := json.Unmarshal(c.Arguments, &args); err != nil {
				return nil, err
			}
			return &tool.Result{Content: []tool.Content{tool.TextContent(args.Text)}}, nil
		})
		s := New(tools, Options{Logger: slog.New(slog.DiscardHandler)})
		defer s.Close()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.ServeListener(ctx, ln, HTTPOptions{}) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				b.Error(err)
			}
		}()
		url = "http://" + ln.Addr().String() + PathMCP
	}
	c := &rawHTTP{url: url, hc: &http.Client{}}
	defer c.hc.CloseIdleConnections()
	if _, err := c.firstCall(); err != nil { // the connection, and the server's first session
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		session, err := c.firstCall()
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := c.end(session); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*9/10].Nanoseconds()), "p90-ns")
}

// rawHTTP is a client of the streamable HTTP transport written out by hand:
// JSON-RPC bodies, the protocol's headers, no SDK.
type rawHTTP struct {
	url string
	hc  *http.Client
}

// firstCall opens a session and calls echo once, checking each answer; it
// returns the session's id.
func (c *rawHTTP) firstCall() (string, error) {
	header, body, err := c.post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	if err != nil {
		return "", fmt.Errorf("initialize: %w", err)
	}
	session := header.Get("Mcp-Session-Id")
	if session == "" || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		return "", fmt.Errorf("initialize: session %q, answer %q", session, body)
	}
	if _, body, err = c.post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil || body != "" {
		return "", fmt.Errorf("initialized: %v %s", err, body)
	}
	if _, body, err = c.post(session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`); err != nil {
		return "", fmt.Errorf("tools/call: %w", err)
	}
	if !strings.Contains(body, `"content":[{"type":"text","text":"hi"}]`) {
		return "", fmt.Errorf("tools/call: answer %s", body)
	}
	return session, nil
}

// post sends one message and returns the answer's headers and body (the
// data of an event stream's message event, or a JSON body; "" for 202).
func (c *rawHTTP) post(session, msg string) (http.Header, string, error) {
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(msg))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return resp.Header, "", nil
	case resp.StatusCode != http.StatusOK:
		return nil, "", fmt.Errorf("status %d: %s", resp.StatusCode, b)
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		for line := range bytes.Lines(b) {
			// The first event may be the resumption primer, with no data.
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok && len(bytes.TrimSpace(data)) > 0 {
				return resp.Header, string(bytes.TrimSpace(data)), nil
			}
		}
		return nil, "", fmt.Errorf("an event stream without data: %q", b)
	}
	return resp.Header, string(b), nil
}

// end closes the session.
func (c *rawHTTP) end(session string) error {
	req, err := http.NewRequest(http.MethodDelete, c.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("DELETE: status %d", resp.StatusCode)
	}
	return nil
}
