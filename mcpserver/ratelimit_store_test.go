package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/pgtest"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/ratestore"
	"github.com/warden-run/warden/tool"
)

// memStore is a RateStore in memory whose failures a test switches on.
type memStore struct {
	mu     sync.Mutex
	tokens map[string]float64
	fail   error
	takes  []string
}

func newMemStore() *memStore { return &memStore{tokens: map[string]float64{}} }

func (m *memStore) Take(_ context.Context, key string, rate float64, burst int) (bool, time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return false, 0, m.fail
	}
	m.takes = append(m.takes, key)
	n, ok := m.tokens[key]
	if !ok {
		n = float64(burst)
	}
	if n < 1 {
		return false, time.Duration((1 - n) / rate * float64(time.Second)), nil
	}
	m.tokens[key] = n - 1
	return true, 0, nil
}

func (m *memStore) Give(_ context.Context, key string, rate float64, burst int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens[key] = min(float64(burst), m.tokens[key]+1)
	return nil
}

func (m *memStore) Name() string { return "postgres://warden@db.example.com:5432/warden" }

func oauthPrincipal(issuer, subject string) principal.Principal {
	return principal.Principal{Subject: subject, Via: principal.ViaOAuth, Issuer: issuer}
}

// TestStoreErrorRefuses: while the store fails, a call is refused naming
// the store and the setting, unless on_backend_error is local: then this
// process counts it. Nothing is counted in the store for a refused call.
func TestStoreErrorRefuses(t *testing.T) {
	store := newMemStore()
	r := newRateLimiter(nil, store, nil)
	rl := RateLimits{PerTool: &RateLimit{Rate: 1, Burst: 1, Setting: "server.rate_limit.per_tool"}}
	store.fail = errors.New("dial tcp 10.0.0.5:5432: connect: connection refused")
	res := r.allow(context.Background(), principal.Local, "s1", "echo", rl)
	want := "the rate limits are kept in postgres://warden@db.example.com:5432/warden, which cannot be reached, so the call is refused " +
		"(server.rate_limit.on_backend_error: refuse; local counts calls in each replica while the database is down): " +
		"dial tcp 10.0.0.5:5432: connect: connection refused"
	if res == nil || res.Error == nil || res.Error.Kind != tool.KindUnavailable || res.Error.Message != want {
		t.Fatalf("with the store down: %+v, want unavailable %q", res, want)
	}
	rl.OnStoreError = StoreErrorLocal
	if res := r.allow(context.Background(), principal.Local, "s1", "echo", rl); res != nil {
		t.Fatalf("local, first call: %+v", res.Error)
	}
	if res := r.allow(context.Background(), principal.Local, "s1", "echo", rl); res == nil || res.Error.Kind != tool.KindRateLimited {
		t.Fatalf("local, second call within the second: %+v, want rate_limited by this process's bucket", res)
	}
}

// TestStoreGivesBack: a call a later bucket refuses takes nothing from the
// earlier ones: the store's tokens are given back.
func TestStoreGivesBack(t *testing.T) {
	store := newMemStore()
	r := newRateLimiter(nil, store, nil)
	rl := RateLimits{
		PerClient: &RateLimit{Rate: 1, Burst: 5, Setting: "server.rate_limit.per_client"},
		PerTool:   &RateLimit{Rate: 1, Burst: 1, Setting: "server.rate_limit.per_tool"},
	}
	if res := r.allow(context.Background(), principal.Local, "s1", "echo", rl); res != nil {
		t.Fatal(res.Error)
	}
	res := r.allow(context.Background(), principal.Local, "s1", "echo", rl)
	if res == nil || !strings.HasPrefix(res.Error.Message, "tool echo is over its rate") {
		t.Fatalf("second call: %+v", res)
	}
	if got := store.tokens[bucketKey("session", "s1")]; got != 4 {
		t.Errorf("the client's bucket holds %v tokens, want 4 (the refused call's given back)", got)
	}
}

// TestPersonBuckets: an OAuth person has a bucket of their own, across
// sessions; the same subject of another issuer, and a subject holding the
// separators of a key, are other people.
func TestPersonBuckets(t *testing.T) {
	r := newRateLimiter(nil, nil, nil)
	rl := RateLimits{PerPerson: func(p principal.Principal) *RateLimit {
		return &RateLimit{Rate: 1.0 / 3600, Burst: 1, Setting: "access.rate_limit"}
	}}
	alice := oauthPrincipal("https://a.example.com", "alice")
	if res := r.allow(context.Background(), alice, "s1", "echo", rl); res != nil {
		t.Fatal(res.Error)
	}
	res := r.allow(context.Background(), alice, "s2", "other", rl)
	if want := `rate_limited: person "alice" is over its rate of 1/h calls (burst 1, access.rate_limit); retry in 3600s`; res == nil || res.Error.Error() != want {
		t.Fatalf("alice's second call, another session and tool: %v, want %q", res.Error, want)
	}
	for _, p := range []principal.Principal{
		oauthPrincipal("https://b.example.com", "alice"),
		oauthPrincipal("https://a.example.com", `alice" "x`),
		oauthPrincipal("https://a.example.com\" \"alice", ""),
		oauthPrincipal("https://a.example.com", "alice\x00"),
		{Subject: "alice", Via: principal.ViaLocal},
	} {
		if res := r.allow(context.Background(), p, "s3", "echo", rl); res != nil {
			t.Errorf("%+v shares alice's bucket: %v", p, res.Error)
		}
	}
}

// FuzzBucketKey: two different principals (issuer, subject) never make one
// person key, and two sessions never one client key, whatever bytes they
// hold.
func FuzzBucketKey(f *testing.F) {
	f.Add("https://a", "alice", "https://a", "alice ")
	f.Add("a\"", "b", "a", "\"b")
	f.Add("a b", "c", "a", "b c")
	f.Fuzz(func(t *testing.T, i1, s1, i2, s2 string) {
		if (i1 != i2 || s1 != s2) && bucketKey("person", i1, s1) == bucketKey("person", i2, s2) {
			t.Fatalf("(%q, %q) and (%q, %q) share a key", i1, s1, i2, s2)
		}
		if i1 != i2 && bucketKey("session", i1) == bucketKey("session", i2) {
			t.Fatalf("sessions %q and %q share a key", i1, i2)
		}
	})
}

// cutProxy forwards TCP connections to target until cut, which closes its
// listener and every connection: the database, seen from warden, stops.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, d)
			p.mu.Unlock()
			go func() { io.Copy(d, c); d.Close() }()
			go func() { io.Copy(c, d); c.Close() }()
		}
	}()
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestSharedRateLimitsPostgres: two servers (replicas), each with its own
// store of one PostgreSQL database, share the per-tool bucket: of burst
// calls alternating between them all run, the next is refused on either.
// With the database stopped a call is refused naming it, unless
// on_backend_error is local.
func TestSharedRateLimitsPostgres(t *testing.T) {
	pg := pgtest.New()
	t.Cleanup(pg.Stop) // after the database's own cleanup (LIFO)
	dbURL := pg.DB(t)
	host := strings.TrimPrefix(dbURL, "postgres://postgres@")
	host, _, _ = strings.Cut(host, "/")
	proxy := newCutProxy(t, host)
	viaProxy := strings.Replace(dbURL, host, proxy.ln.Addr().String(), 1)

	const burst = 5
	onError := ""
	rates := func() RateLimits {
		return RateLimits{PerTool: &RateLimit{Rate: 1.0 / 3600, Burst: burst, Setting: "server.rate_limit.per_tool"}, OnStoreError: onError}
	}
	var replicas []*mcp.ClientSession
	for range 2 {
		store, err := ratestore.Open(viaProxy, 2*time.Second, 2)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(store.Close)
		s, _ := newServer(t, newFakeTools(desc("echo")), Options{RateLimit: rates, RateStore: store})
		replicas = append(replicas, connect(t, s, transports[0], nil))
	}
	call := func(cs *mcp.ClientSession) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo"})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for i := range burst {
		if res := call(replicas[i%2]); res.IsError {
			t.Fatalf("call %d of the burst, on replica %d: %s", i, i%2, text(res))
		}
	}
	for i, cs := range replicas {
		res := call(cs)
		if !res.IsError || res.Meta[tool.MetaKind] != string(tool.KindRateLimited) ||
			!strings.HasPrefix(text(res), "rate_limited: tool echo is over its rate of 1/h calls (burst 5, server.rate_limit.per_tool); retry in ") {
			t.Errorf("call %d past the burst, on replica %d: %q, want rate_limited", burst+1+i, i, text(res))
		}
	}

	proxy.cut()
	res := call(replicas[0])
	want := fmt.Sprintf("unavailable: the rate limits are kept in postgres://postgres@%s/%s, which cannot be reached, so the call is refused "+
		"(server.rate_limit.on_backend_error: refuse;", proxy.ln.Addr().String(), dbName(dbURL))
	if !res.IsError || res.Meta[tool.MetaKind] != string(tool.KindUnavailable) || !strings.HasPrefix(text(res), want) {
		t.Errorf("with the database stopped: %q, want it to start %q", text(res), want)
	}
	onError = StoreErrorLocal
	if res := call(replicas[0]); res.IsError {
		t.Errorf("on_backend_error local, the database stopped: %q, want the call counted in this process", text(res))
	}
}

func dbName(url string) string {
	_, rest, _ := strings.Cut(strings.TrimPrefix(url, "postgres://"), "/")
	name, _, _ := strings.Cut(rest, "?")
	return name
}
