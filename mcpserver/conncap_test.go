package mcpserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveHTTP runs s.ServeListener on a loopback port until the test ends and
// returns the base URL.
func serveHTTP(t *testing.T, s *Server, opts HTTPOptions) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeListener(ctx, ln, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeListener: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// dribble opens a connection that sends a POST's headers and the first byte
// of its body, and then nothing: a slowloris client.
func dribble(t *testing.T, base string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{")
	return c
}

// closedByServer waits until the server has closed c, and returns what it
// sent before.
func closedByServer(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(time.Minute)) // patience, not an assertion
	b, err := io.ReadAll(c)
	if err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("connection not closed by the server: %v", err)
	}
	return string(b)
}

func wantHealthy(t *testing.T, base string) {
	t.Helper()
	resp, err := http.Get(base + PathHealthz)
	if err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %s", resp.Status)
	}
}

func TestConnectionCapEvictsStalledClientsNotLiveOnes(t *testing.T) {
	s, logs := newServer(t, newFakeTools(desc("echo")), Options{})
	const max = 4
	base := serveHTTP(t, s, HTTPOptions{MaxConnections: max, BodyTimeout: time.Hour, HeaderTimeout: time.Hour})

	// A live session at the cap: its event stream (GET) is serving a
	// complete request, so it is never evicted.
	cs := connectTo(t, base, transport{name: "http/2025-11-25", http: true, protocol: "2025-11-25"})

	var stalled []net.Conn
	for range 2 * max {
		stalled = append(stalled, dribble(t, base))
	}
	// The first ones are evicted as the later ones arrive.
	for _, c := range stalled[:max] {
		closedByServer(t, c)
	}
	wantHealthy(t, base)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("live session at the cap: %v %+v", err, res)
	}
	fresh := connectTo(t, base, transport{name: "http/2026-07-28", http: true})
	if res, err := fresh.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("new stateless client at the cap: %v %+v", err, res)
	}
	if !strings.Contains(logs.String(), "connection evicted") {
		t.Errorf("evictions were not logged:\n%s", logs)
	}
}

func TestSlowBodiesAreTimedOut(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("echo")), Options{})
	base := serveHTTP(t, s, HTTPOptions{MaxConnections: 64, BodyTimeout: 50 * time.Millisecond})
	var stalled []net.Conn
	for range 8 {
		stalled = append(stalled, dribble(t, base))
	}
	for _, c := range stalled {
		got := closedByServer(t, c)
		if !strings.HasPrefix(got, "HTTP/1.1 408") || !strings.Contains(got, "server.body_timeout") {
			t.Errorf("a timed-out body got %.300q", got)
		}
	}
	wantHealthy(t, base)
}

// TestSlowHeadersAreTimedOut: a client that never finishes its headers is
// closed after HeaderTimeout.
func TestSlowHeadersAreTimedOut(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("echo")), Options{})
	base := serveHTTP(t, s, HTTPOptions{HeaderTimeout: 50 * time.Millisecond})
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	closedByServer(t, c)
}

// TestConnCapEvictsTheStalestAndSparesServing drives the cap's Accept
// directly: eviction takes the connection evictable longest, never one
// serving a complete request, and a new connection is closed only when
// every connection is serving.
func TestConnCapEvictsTheStalestAndSparesServing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs, buf := testLogger()
	l := newConnCap(ln, 2, logs)
	defer l.Close()
	type pair struct {
		client net.Conn
		server *cappedConn
	}
	accepted := make(chan *cappedConn)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c.(*cappedConn)
		}
	}()
	// open dials one connection the cap accepts and returns both ends.
	open := func() pair {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return pair{client: c, server: <-accepted}
	}
	a, b := open(), open()
	doneA := a.server.serve(false) // a serves a request; b is idle
	c := open()                    // evicts b, the only evictable one
	closedByServer(t, b.client)
	doneC := c.server.serve(false)
	// Every connection serves: a new one is closed, and Accept goes on.
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	closedByServer(t, d)
	doneA() // a is evictable again, and the stalest
	e := open()
	closedByServer(t, a.client)
	// Event streams cannot hold every slot: with c running a call and e
	// holding only a stream, a new connection evicts e's stream.
	doneE := e.server.serve(true)
	open()
	closedByServer(t, e.client)
	doneE()
	doneC()
	if l.evicted.Load() != 3 || l.refused.Load() != 1 {
		t.Errorf("evicted %d, refused %d; want 3, 1\n%s", l.evicted.Load(), l.refused.Load(), buf)
	}
}
