package net

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/tool"
)

type nopObserver struct{}

func (nopObserver) Progress(tool.Progress) {}
func (nopObserver) Log(slog.Level, string) {}

func callWith(grants ...string) *hostfuncs.Call {
	return &hostfuncs.Call{Tool: "t", Grants: tool.Capabilities{Net: grants}, Observer: nopObserver{}}
}

// fixture is a loopback test server, the capability, and a record of every
// connection the capability let through the guard and every name it
// resolved.
type fixture struct {
	srv   *httptest.Server
	port  string
	hits  atomic.Int64
	net   *Net
	logs  *strings.Builder
	mu    sync.Mutex
	dials []netip.AddrPort
	names []string
	// dns is the fake resolver: names absent from it do not resolve.
	dns map[string][]netip.Addr
}

func newFixture(t *testing.T, cfg Config, handler http.HandlerFunc) *fixture {
	t.Helper()
	f := &fixture{dns: map[string][]netip.Addr{}, logs: &strings.Builder{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		handler(w, r)
	}))
	t.Cleanup(f.srv.Close)
	u, _ := url.Parse(f.srv.URL)
	f.port = u.Port()
	logger := slog.New(slog.NewTextHandler(syncWriter{&f.mu, f.logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	n, err := New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	n.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.names = append(f.names, host)
		if addrs, ok := f.dns[host]; ok {
			return addrs, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}
	n.connecting = func(ap netip.AddrPort) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.dials = append(f.dials, ap)
	}
	f.net = n
	return f
}

type syncWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// local is the test server's URL for path.
func (f *fixture) local(path string) string { return "http://127.0.0.1:" + f.port + path }

// grant is the explicit grant of the test server.
func (f *fixture) grant() string { return "http://127.0.0.1:" + f.port }

func (f *fixture) dialed() []netip.AddrPort {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]netip.AddrPort(nil), f.dials...)
}

func (f *fixture) resolved() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.names...)
}

func (f *fixture) serve(t *testing.T, ctx context.Context, call *hostfuncs.Call, req map[string]any) (*reply, error) {
	t.Helper()
	if _, ok := req["op"]; !ok {
		req["op"] = "request"
	}
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.net.Serve(ctx, call, raw)
	if err != nil {
		if out != nil {
			t.Fatalf("Serve returned both %v and %v", out, err)
		}
		return nil, err
	}
	return out.(*reply), nil
}

func wantKind(t *testing.T, err error, kind tool.Kind) {
	t.Helper()
	if got := tool.KindOf(err); got != kind {
		t.Fatalf("error kind = %q (%v), want %q", got, err, kind)
	}
}

func echo(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Method", r.Method)
	w.Header().Set("X-Token", r.Header.Get("X-Token"))
	if r.URL.Path == "/binary" {
		w.Write([]byte{0xff, 0x00, 0xfe})
		return
	}
	if r.URL.Path == "/missing" {
		http.Error(w, "nope", http.StatusNotFound)
		return
	}
	fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.RequestURI(), body)
}

func TestRequests(t *testing.T) {
	f := newFixture(t, Config{}, echo)
	call := callWith(f.grant())

	r, err := f.serve(t, t.Context(), call, map[string]any{"url": f.local("/a?b=c#frag"), "headers": map[string]string{"X-Token": "tok"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != 200 || r.StatusText != "OK" || *r.Body != "GET /a?b=c " || r.Headers["X-Token"][0] != "tok" || r.Truncated || r.URL != f.local("/a?b=c") {
		t.Fatalf("GET reply %+v body %q", r, *r.Body)
	}
	r, err = f.serve(t, t.Context(), call, map[string]any{"method": "POST", "url": f.local("/p"), "body": "hello"})
	if err != nil || *r.Body != "POST /p hello" {
		t.Fatalf("POST: %+v %v", r, err)
	}
	r, err = f.serve(t, t.Context(), call, map[string]any{"method": "PUT", "url": f.local("/p"), "bodyBase64": base64.StdEncoding.EncodeToString([]byte("bin"))})
	if err != nil || *r.Body != "PUT /p bin" {
		t.Fatalf("PUT: %+v %v", r, err)
	}
	r, err = f.serve(t, t.Context(), call, map[string]any{"url": f.local("/binary")})
	if err != nil || r.Body != nil || *r.BodyBase64 != base64.StdEncoding.EncodeToString([]byte{0xff, 0, 0xfe}) {
		t.Fatalf("binary: %+v %v", r, err)
	}
	// An HTTP error status is a reply, not an error.
	r, err = f.serve(t, t.Context(), call, map[string]any{"url": f.local("/missing")})
	if err != nil || r.Status != 404 || *r.Body != "nope\n" {
		t.Fatalf("404: %+v %v", r, err)
	}
	if len(f.resolved()) != 0 {
		t.Fatalf("IP literal URLs were resolved: %q", f.resolved())
	}
	for _, d := range f.dialed() {
		if d.Addr() != netip.MustParseAddr("127.0.0.1") {
			t.Fatalf("dialed %v", d)
		}
	}
}

// TestDenied checks every refusal: the exact kind, a message naming the host
// and the config key, and that nothing was dialed or even resolved.
func TestDenied(t *testing.T) {
	f := newFixture(t, Config{}, echo)
	f.dns["rebind.test"] = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	f.dns["metadata.test"] = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("10.0.0.1")}
	p := f.port
	for _, tc := range []struct {
		name   string
		grants []string
		url    string
		want   []string // in the message
	}{
		{"no grant", nil, f.local("/"), []string{`net: request to host "127.0.0.1" is not granted to tool "t": it has no net grant (config key tools.grants.t.net, e.g. "http://127.0.0.1:` + p + `")`}},
		{"only invalid grants", []string{"ftp://x", ""}, f.local("/"), []string{"no net grant"}},
		{"unlisted host", []string{f.grant()}, "https://example.com/", []string{`"example.com"`, "tools.grants.t.net", `"https://example.com"`}},
		{"loopback without explicit grant", []string{"http://*:" + p}, f.local("/"), []string{"127.0.0.1", "not a public address", "tools.grants.t.net", `"127.0.0.1:` + p + `"`}},
		{"IPv4-mapped loopback", []string{"http://*:" + p}, "http://[::ffff:127.0.0.1]:" + p + "/", []string{"127.0.0.1", "not a public address"}},
		{"IPv6 loopback", []string{"http://*:" + p}, "http://[::1]:" + p + "/", []string{"::1", "not a public address"}},
		{"private 10/8", []string{"http://*"}, "http://10.0.0.1/", []string{"10.0.0.1", "not a public address"}},
		{"NAT64 of private", []string{"http://*"}, "http://[64:ff9b::a00:1]/", []string{"not a public address"}},
		{"link-local v6", []string{"http://*"}, "http://[fe80::1]/", []string{"fe80::1", "not a public address"}},
		{"metadata", []string{"http://*"}, "http://169.254.169.254/latest/meta-data/", []string{"169.254.169.254", "not a public address"}},
		{"unspecified", []string{"http://*:" + p}, "http://0.0.0.0:" + p + "/", []string{"0.0.0.0", "not a public address"}},
		{"name resolving to loopback (rebinding)", []string{"http://rebind.test:" + p}, "http://rebind.test:" + p + "/", []string{"127.0.0.1", `"rebind.test"`, `"rebind.test private"`}},
		{"name resolving only to private", []string{"http://*"}, "http://metadata.test/", []string{"169.254.169.254", "not a public address"}},
		{"localhost by wildcard", []string{"http://*:" + p}, "http://localhost:" + p + "/", []string{"not a public address"}},
		{"wrong port", []string{"http://127.0.0.1:1"}, f.local("/"), []string{`"127.0.0.1"`, "tools.grants.t.net"}},
		{"https-only grant", []string{"127.0.0.1:" + p}, f.local("/"), []string{`"127.0.0.1"`}},
		{"other loopback address", []string{"http://127.0.0.2:" + p}, f.local("/"), []string{`"127.0.0.1"`}},
		{"private flag on another name", []string{"http://other.test:" + p + " private", "http://*:" + p}, "http://rebind.test:" + p + "/", []string{"not a public address"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.resolved())
			f.dns["localhost"] = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}
			r, err := f.serve(t, t.Context(), callWith(tc.grants...), map[string]any{"url": tc.url, "body": "s3cret-body"})
			wantKind(t, err, tool.KindDenied)
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q lacks %q", err, want)
				}
			}
			if r != nil || strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("leaked: %v %v", r, err)
			}
			if d := f.dialed(); len(d) != 0 {
				t.Fatalf("dialed %v", d)
			}
			if strings.Contains(tc.name, "grant") || strings.Contains(tc.name, "unlisted") || strings.Contains(tc.name, "port") {
				if names := f.resolved()[before:]; len(names) != 0 {
					t.Fatalf("resolved %q before refusing", names)
				}
			}
		})
	}
	if f.hits.Load() != 0 {
		t.Fatalf("the server saw %d requests", f.hits.Load())
	}
	if strings.Contains(f.logs.String(), "s3cret") {
		t.Fatalf("log leaks the body:\n%s", f.logs)
	}
}

func TestExplicitPrivateGrants(t *testing.T) {
	f := newFixture(t, Config{}, echo)
	f.dns["svc.internal"] = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	f.dns["localhost"] = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	for _, tc := range []struct{ grant, url string }{
		{f.grant(), f.local("/")},
		{"http://svc.internal:" + f.port + " private", "http://svc.internal:" + f.port + "/"},
		{"http://localhost:" + f.port, "http://localhost:" + f.port + "/"},
	} {
		r, err := f.serve(t, t.Context(), callWith(tc.grant), map[string]any{"url": tc.url})
		if err != nil || r.Status != 200 {
			t.Fatalf("%s with %q: %+v %v", tc.url, tc.grant, r, err)
		}
	}
	if n := len(f.dialed()); n != 3 {
		t.Fatalf("dialed %d times, want 3", n)
	}
	// localhost allows loopback only, even if the name resolves elsewhere.
	f.dns["localhost"] = []netip.Addr{netip.MustParseAddr("10.0.0.1")}
	_, err := f.serve(t, t.Context(), callWith("http://localhost:"+f.port), map[string]any{"url": "http://localhost:" + f.port + "/"})
	wantKind(t, err, tool.KindDenied)
	if n := len(f.dialed()); n != 3 {
		t.Fatalf("dialed 10.0.0.1 for localhost")
	}
}

func TestRedirects(t *testing.T) {
	var f *fixture
	f = newFixture(t, Config{MaxRedirects: 3}, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-unlisted":
			http.Redirect(w, r, "http://unlisted.test/", http.StatusFound)
		case "/to-private":
			http.Redirect(w, r, "http://10.0.0.1:"+f.port+"/", http.StatusFound)
		case "/to-rebind":
			http.Redirect(w, r, "http://rebind.test:"+f.port+"/", http.StatusFound)
		case "/to-https":
			http.Redirect(w, r, "https://127.0.0.1:"+f.port+"/", http.StatusFound)
		case "/to-ftp":
			http.Redirect(w, r, "ftp://127.0.0.1/", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/to-ok":
			http.Redirect(w, r, "/ok", http.StatusTemporaryRedirect)
		default:
			echo(w, r)
		}
	})
	f.dns["rebind.test"] = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	p := f.port
	grants := []string{f.grant(), "http://*:" + p, "http://rebind.test:" + p}

	r, err := f.serve(t, t.Context(), callWith(grants...), map[string]any{"method": "POST", "url": f.local("/to-ok"), "body": "kept"})
	if err != nil || *r.Body != "POST /ok kept" || r.URL != f.local("/ok") {
		t.Fatalf("allowed redirect: %+v %v", r, err)
	}

	for _, tc := range []struct {
		path, want string
		kind       tool.Kind
	}{
		{"/to-unlisted", `"unlisted.test"`, tool.KindDenied},
		{"/to-private", "10.0.0.1", tool.KindDenied},
		{"/to-rebind", "not a public address", tool.KindDenied},
		{"/to-https", `"https://127.0.0.1:` + p + `"`, tool.KindDenied},
		{"/to-ftp", "unusable URL", tool.KindFailed},
		{"/loop", "stopped after 3 redirects", tool.KindFailed},
	} {
		dials := len(f.dialed())
		hits := f.hits.Load()
		_, err := f.serve(t, t.Context(), callWith(grants...), map[string]any{"url": f.local(tc.path)})
		if tool.KindOf(err) != tc.kind {
			t.Fatalf("%s: error kind %q (%v), want %q", tc.path, tool.KindOf(err), err, tc.kind)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: message %q lacks %q", tc.path, err, tc.want)
		}
		for _, d := range f.dialed()[dials:] {
			if d.Addr() != netip.MustParseAddr("127.0.0.1") || d.Port() != f.srv.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port() {
				t.Fatalf("%s: dialed %v", tc.path, d)
			}
		}
		if tc.kind == tool.KindDenied && f.hits.Load()-hits != 1 {
			t.Fatalf("%s: the server saw %d requests, want only the first", tc.path, f.hits.Load()-hits)
		}
	}
	if strings.Contains(strings.Join(f.resolved(), ","), "unlisted.test") {
		t.Fatal("resolved the unlisted redirect target")
	}
}

func TestResponseBounds(t *testing.T) {
	f := newFixture(t, Config{MaxResponseBytes: 10}, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/endless":
			chunk := []byte(strings.Repeat("x", 4096))
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "/utf8":
			w.Write([]byte("123456789é.")) // é straddles the limit
		default:
			w.Write([]byte("0123456789abcdef"))
		}
	})
	call := callWith(f.grant())
	r, err := f.serve(t, t.Context(), call, map[string]any{"url": f.local("/")})
	if err != nil || *r.Body != "0123456789" || !r.Truncated {
		t.Fatalf("over-size body: %+v %v", r, err)
	}
	r, err = f.serve(t, t.Context(), call, map[string]any{"url": f.local("/endless")})
	if err != nil || *r.Body != "xxxxxxxxxx" || !r.Truncated {
		t.Fatalf("endless body: %+v %v", r, err)
	}
	r, err = f.serve(t, t.Context(), call, map[string]any{"url": f.local("/utf8")})
	if err != nil || r.Body == nil || *r.Body != "123456789" || !r.Truncated {
		t.Fatalf("cut inside a rune: %+v %v", r, err)
	}
	// The limit is live config.
	if err := f.net.SetConfig(Config{MaxResponseBytes: 12}); err != nil {
		t.Fatal(err)
	}
	r, err = f.serve(t, t.Context(), call, map[string]any{"url": f.local("/")})
	if err != nil || *r.Body != "0123456789ab" {
		t.Fatalf("after SetConfig: %+v %v", r, err)
	}
	if err := f.net.SetConfig(Config{Timeout: -1}); err == nil {
		t.Fatal("SetConfig accepted a negative timeout")
	}
	r, err = f.serve(t, t.Context(), call, map[string]any{"url": f.local("/")})
	if err != nil || *r.Body != "0123456789ab" {
		t.Fatalf("a refused config changed the live one: %+v %v", r, err)
	}
}

func TestTimeBounds(t *testing.T) {
	release := make(chan struct{})
	f := newFixture(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		w.Write([]byte("done"))
	})
	defer close(release)
	call := callWith(f.grant())
	secret := "?token=s3cret"

	_, err := f.serve(t, t.Context(), call, map[string]any{"url": f.local("/slow" + secret), "timeoutMs": 50})
	wantKind(t, err, tool.KindTimeout)
	if !strings.Contains(err.Error(), "50ms") {
		t.Fatalf("message %q does not give the bound", err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	_, err = f.serve(t, ctx, call, map[string]any{"url": f.local("/slow" + secret)})
	cancel()
	wantKind(t, err, tool.KindTimeout)

	ctx, cancel = context.WithCancel(t.Context())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = f.serve(t, ctx, call, map[string]any{"url": f.local("/slow" + secret)})
	wantKind(t, err, tool.KindCancelled)

	f.net.SetConfig(Config{Timeout: 50 * time.Millisecond})
	_, err = f.serve(t, t.Context(), call, map[string]any{"url": f.local("/slow" + secret), "timeoutMs": 60_000})
	wantKind(t, err, tool.KindTimeout)

	// Connection failures are failed, and say which host.
	_, err = f.serve(t, t.Context(), callWith("http://127.0.0.1:1"), map[string]any{"url": "http://127.0.0.1:1/" + secret})
	wantKind(t, err, tool.KindFailed)

	// The next call still works.
	r, err := f.serve(t, t.Context(), call, map[string]any{"url": f.local("/fast")})
	if err != nil || *r.Body != "done" {
		t.Fatalf("after the timeouts: %+v %v", r, err)
	}
	if strings.Contains(f.logs.String(), "s3cret") {
		t.Fatalf("log leaks the query:\n%s", f.logs)
	}
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t, Config{}, echo)
	call := callWith(f.grant(), "*")
	for _, raw := range []string{
		``, `[]`, `{"op":"request","url":"` + f.local("/") + `"} {}`,
		`{"url":"` + f.local("/") + `"}`,
		`{"op":"fetch","url":"` + f.local("/") + `"}`,
		`{"op":"request","url":"` + f.local("/") + `","extra":1}`,
		`{"op":"request","method":"CONNECT","url":"` + f.local("/") + `"}`,
		`{"op":"request","method":"get","url":"` + f.local("/") + `"}`,
		`{"op":"request","url":"ftp://127.0.0.1/"}`,
		`{"op":"request","url":"http://user:pw@127.0.0.1:` + f.port + `/"}`,
		`{"op":"request","url":"https://bücher.de/"}`,
		`{"op":"request","url":"/relative"}`,
		`{"op":"request","url":"%zz"}`,
		`{"op":"request","url":"` + f.local("/") + `","body":"a","bodyBase64":"YQ=="}`,
		`{"op":"request","url":"` + f.local("/") + `","bodyBase64":"not base64!"}`,
		`{"op":"request","url":"` + f.local("/") + `","headers":{"Host":"evil"}}`,
		`{"op":"request","url":"` + f.local("/") + `","headers":{"transfer-encoding":"chunked"}}`,
		`{"op":"request","url":"` + f.local("/") + `","headers":{"X-A":"b\r\nX-Injected: 1"}}`,
		`{"op":"request","url":"` + f.local("/") + `","headers":{"Bad Name":"x"}}`,
		`{"op":"request","url":"` + f.local("/") + `","timeoutMs":-1}`,
	} {
		out, err := f.net.Serve(t.Context(), call, []byte(raw))
		if tool.KindOf(err) != tool.KindInvalidArguments || out != nil {
			t.Errorf("%s: %v %v", raw, out, err)
		}
	}
	if f.hits.Load() != 0 || len(f.dialed()) != 0 {
		t.Fatalf("bad requests reached the network: %d hits, dials %v", f.hits.Load(), f.dialed())
	}
	// Without any grant, even a malformed request is denied.
	_, err := f.net.Serve(t.Context(), callWith(), []byte(`garbage`))
	wantKind(t, err, tool.KindDenied)
}

func TestConfigDefaults(t *testing.T) {
	n, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := *n.config.Load(); got != (Config{DefaultMaxResponseBytes, DefaultTimeout, DefaultMaxRedirects}) {
		t.Fatalf("defaults = %+v", got)
	}
	if _, err := New(Config{MaxResponseBytes: -1}, nil); err == nil {
		t.Fatal("New accepted a negative limit")
	}
}

// BenchmarkRequest measures one loopback GET through the whole capability,
// including the per-call transport and the guard.
func BenchmarkRequest(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	n, _ := New(Config{}, nil)
	call := callWith("http://" + srv.Listener.Addr().String())
	raw := []byte(`{"op":"request","url":"` + srv.URL + `/"}`)
	for b.Loop() {
		if _, err := n.Serve(b.Context(), call, raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGuard(b *testing.B) {
	g, _ := parseGrant("http://127.0.0.1:8080")
	grants := []grant{g}
	addrs := []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("2606:4700::1")}
	for b.Loop() {
		for _, a := range addrs {
			checkAddr("t", grants, "example.com", 443, a)
		}
	}
}
