package download

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/wasmfile"
)

// module is a core-module preamble followed by n-8 patterned bytes.
func module(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	copy(b, []byte{0, 'a', 's', 'm', 1, 0, 0, 0})
	return b
}

func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func bytesHandler(b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { w.Write(b) }
}

// assertEmpty fails unless dir holds nothing.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind in Dir: %s", e.Name())
	}
}

// getErr runs Get expecting an error that wraps want, and checks Dir is empty.
func getErr(t *testing.T, ctx context.Context, rawURL string, opts Options, want ...error) error {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	f, err := Get(ctx, rawURL, opts)
	if err == nil {
		t.Fatalf("Get(%s) = %+v, want an error", rawURL, f)
	}
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Errorf("error %q does not wrap %q", err, w)
		}
	}
	if strings.ContainsAny(err.Error(), "\x1b\r\n") {
		t.Errorf("error has raw control characters: %q", err)
	}
	assertEmpty(t, opts.Dir)
	return err
}

func contains(t *testing.T, err error, subs ...string) {
	t.Helper()
	if testing.Verbose() {
		t.Log(err)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
}

func TestGet(t *testing.T) {
	body := module(100_000)
	srv := serve(t, bytesHandler(body))
	dir := t.TempDir()
	u := srv.URL + "/tool.wasm"
	f, err := Get(context.Background(), u, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if f.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("SHA256 %s, want %x", f.SHA256, sum)
	}
	if f.Size != int64(len(body)) || f.URL != u || f.FinalURL != u {
		t.Errorf("got %+v", f)
	}
	if filepath.Dir(f.Path) != dir || strings.HasSuffix(f.Path, ".wasm") ||
		!strings.HasPrefix(filepath.Base(f.Path), ".fetch-") || !strings.HasSuffix(f.Path, ".tmp") {
		t.Errorf("Path %s: want .fetch-*.tmp in %s", f.Path, dir)
	}
	got, err := os.ReadFile(f.Path)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("file content differs (%v)", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("Dir holds %d entries, want 1", len(ents))
	}
}

func TestGetExactlyMaxBytes(t *testing.T) {
	body := module(4096)
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(body[:10]) // no Content-Length: flushed as chunked
		w.(http.Flusher).Flush()
		w.Write(body[10:])
	}))
	f, err := Get(context.Background(), srv.URL+"/t.wasm", Options{Dir: t.TempDir(), MaxBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if f.Size != 4096 {
		t.Errorf("Size %d", f.Size)
	}
}

func TestGetTLS(t *testing.T) {
	body := module(1000)
	srv := httptest.NewUnstartedServer(bytesHandler(body))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.StartTLS()
	defer srv.Close()
	f, err := Get(context.Background(), srv.URL+"/t.wasm", Options{Dir: t.TempDir(), HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if f.Size != 1000 {
		t.Errorf("Size %d", f.Size)
	}
	// The default client does not trust the test certificate.
	getErr(t, context.Background(), srv.URL+"/t.wasm", Options{})
}

func TestGetStatus(t *testing.T) {
	for _, code := range []int{404, 500, 204, 302} {
		srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code) // a 302 without Location is not followed
			w.Write(module(100))
		}))
		u := srv.URL + "/tool.wasm"
		err := getErr(t, context.Background(), u, Options{}, ErrStatus)
		contains(t, err, strconv.Itoa(code)+" "+http.StatusText(code), u)
	}
}

func TestGetNotWasm(t *testing.T) {
	for name, c := range map[string]struct {
		body []byte
		want error
	}{
		"html":      {[]byte("<!doctype html><html><body>Not found</body></html>"), wasmfile.ErrNotWasm},
		"component": {append([]byte{0, 'a', 's', 'm', 0x0d, 0, 1, 0}, make([]byte, 100)...), wasmfile.ErrComponent},
		"empty":     {nil, wasmfile.ErrNotWasm},
		"short":     {[]byte{0, 'a', 's', 'm', 1}, wasmfile.ErrNotWasm},
	} {
		t.Run(name, func(t *testing.T) {
			srv := serve(t, bytesHandler(c.body))
			err := getErr(t, context.Background(), srv.URL+"/tool.wasm", Options{}, c.want)
			contains(t, err, srv.URL+"/tool.wasm")
		})
	}
}

func TestGetContentLengthOverLimit(t *testing.T) {
	const limit = 1024
	release := make(chan struct{})
	var wrote atomic.Int64
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(limit+1))
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		// No body until Get has returned: a Get that read the body
		// would wait here until its timeout.
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		n, _ := w.Write(module(limit + 1))
		wrote.Add(int64(n))
	}))
	err := getErr(t, context.Background(), srv.URL+"/t.wasm", Options{MaxBytes: limit, Timeout: 10 * time.Second}, ErrTooLarge)
	if n := wrote.Load(); n != 0 {
		t.Errorf("the server had written %d body bytes when Get returned", n)
	}
	close(release)
	contains(t, err, "limit is 1.0 KiB", "says the file is 1.0 KiB (1025 bytes)", "tools.fetch.max_size")
}

func TestGetStreamOverLimit(t *testing.T) {
	const limit = 1024
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := module(limit + 1)
		w.Write(b[:8]) // no Content-Length
		w.(http.Flusher).Flush()
		w.Write(b[8:])
	}))
	err := getErr(t, context.Background(), srv.URL+"/t.wasm", Options{MaxBytes: limit}, ErrTooLarge)
	contains(t, err, "tools.fetch.max_size")
}

func TestGetRedirectSameHost(t *testing.T) {
	body := module(500)
	mux := http.NewServeMux()
	mux.HandleFunc("/latest.wasm", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/v1/tool.wasm", http.StatusFound)
	})
	mux.HandleFunc("/v1/tool.wasm", bytesHandler(body))
	srv := serve(t, mux)
	f, err := Get(context.Background(), srv.URL+"/latest.wasm", Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if f.FinalURL != srv.URL+"/v1/tool.wasm" || f.URL != srv.URL+"/latest.wasm" {
		t.Errorf("URL %s FinalURL %s", f.URL, f.FinalURL)
	}
}

func TestGetRedirectOtherHost(t *testing.T) {
	body := module(500)
	other := serve(t, bytesHandler(body))
	port := other.Listener.Addr().(*net.TCPAddr).Port
	target := fmt.Sprintf("localhost:%d", port)
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+target+"/asset", http.StatusFound)
	}))
	from := strings.TrimPrefix(srv.URL, "http://")
	err := getErr(t, context.Background(), srv.URL+"/t.wasm", Options{}, ErrRedirect)
	contains(t, err, from, target, "tools.fetch.redirect_hosts: ["+target+"]")

	// Another port of the same name is another host.
	getErr(t, context.Background(), srv.URL+"/t.wasm",
		Options{AllowRedirectHosts: []string{"localhost", fmt.Sprintf("localhost:%d", port+1)}}, ErrRedirect)

	for _, allow := range []string{target, strings.ToUpper(target), " " + target} {
		f, err := Get(context.Background(), srv.URL+"/t.wasm",
			Options{Dir: t.TempDir(), AllowRedirectHosts: []string{"example.com", allow}})
		if err != nil {
			t.Fatalf("allowed %q: %v", allow, err)
		}
		if f.FinalURL != "http://"+target+"/asset" || f.Size != 500 {
			t.Errorf("got %+v", f)
		}
	}
}

func TestGetRedirectHTTPSToHTTP(t *testing.T) {
	plain := serve(t, bytesHandler(module(100)))
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/t.wasm", http.StatusMovedPermanently)
	}))
	defer tlsSrv.Close()
	plainHost := strings.TrimPrefix(plain.URL, "http://")
	err := getErr(t, context.Background(), tlsSrv.URL+"/t.wasm",
		Options{HTTPClient: tlsSrv.Client(), AllowRedirectHosts: []string{plainHost}}, ErrInsecure, ErrRedirect)
	contains(t, err, "https", plain.URL)
}

func TestGetRedirectRefusedURL(t *testing.T) {
	for _, loc := range []string{"http://example.invalid/t.wasm", "ftp://localhost/t.wasm"} {
		srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, loc, http.StatusFound)
		}))
		err := getErr(t, context.Background(), srv.URL+"/t.wasm",
			Options{AllowRedirectHosts: []string{"example.invalid", "localhost"}}, ErrInsecure, ErrRedirect)
		contains(t, err, "use https://")
	}
	// Credentials in a redirect are refused and not shown.
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "http://tok:hunter2@"+r.Host+"/t.wasm")
		w.WriteHeader(http.StatusFound)
	}))
	err := getErr(t, context.Background(), srv.URL+"/t.wasm", Options{}, ErrInsecure, ErrRedirect)
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error shows the credentials: %s", err)
	}
}

func TestGetTooManyRedirects(t *testing.T) {
	body := module(100)
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r/"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		if n == 0 {
			w.Write(body)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/r/%d", n-1), http.StatusTemporaryRedirect)
	}))
	if _, err := Get(context.Background(), srv.URL+fmt.Sprintf("/r/%d", MaxRedirects), Options{Dir: t.TempDir()}); err != nil {
		t.Fatalf("%d redirects: %v", MaxRedirects, err)
	}
	err := getErr(t, context.Background(), srv.URL+fmt.Sprintf("/r/%d", MaxRedirects+1), Options{}, ErrRedirect)
	contains(t, err, "more than 5 redirects")
}

func TestGetRefusedURLs(t *testing.T) {
	var hits atomic.Int64
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	u, _ := url.Parse(srv.URL)
	for _, c := range []struct {
		url  string
		want []string
	}{
		{"http://example.invalid/x.wasm", []string{"use https://", "example.invalid"}},
		{"http://10.0.0.1/x.wasm", []string{"use https://"}},
		{"http://127.0.0.1.example.com/x.wasm", []string{"use https://"}},
		{"ftp://example.com/x.wasm", []string{"use https://"}},
		{"file:///etc/passwd", []string{"use https://"}},
		{"example.com/x.wasm", []string{"no scheme"}},
		{"https:///x.wasm", []string{"no host"}},
		{"http://user:hunter2@" + u.Host + "/x.wasm", []string{"credentials", "lockfile"}},
		{"https://ghp_secrettoken@example.com/x.wasm", []string{"credentials"}},
	} {
		err := getErr(t, context.Background(), c.url, Options{}, ErrInsecure)
		contains(t, err, c.want...)
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "ghp_secret") {
			t.Errorf("error shows the credentials: %s", err)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("the server saw %d requests", hits.Load())
	}
	getErr(t, context.Background(), "http://[::1\x1b]/x", Options{})
}

func TestGetLoopbackHTTP(t *testing.T) {
	for _, h := range []string{"localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "[::1]", "[::1]:8080", "localhost:1"} {
		u := &url.URL{Scheme: "http", Host: h}
		if err := checkURL(u); err != nil {
			t.Errorf("%s: %v", h, err)
		}
	}
}

func TestGetTimeout(t *testing.T) {
	for name, writeHead := range map[string]bool{"headers": false, "body": true} {
		t.Run(name, func(t *testing.T) {
			srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if writeHead {
					w.Write(module(8))
					w.(http.Flusher).Flush()
				}
				<-r.Context().Done()
			}))
			err := getErr(t, context.Background(), srv.URL+"/t.wasm", Options{Timeout: 50 * time.Millisecond}, context.DeadlineExceeded)
			contains(t, err, "timed out after 50ms", "tools.fetch.timeout")
		})
	}
}

func TestGetCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	srv := serve(t, bytesHandler(module(100)))
	getErr(t, ctx, srv.URL+"/t.wasm", Options{}, context.Canceled)

	// Cancelled while the body streams, after the preamble was read and
	// the temp file created: the file must go.
	srv = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(module(64))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	ctx, cancel = context.WithCancel(context.Background())
	client := &http.Client{Transport: cancelOnRead{http.DefaultTransport, 2, cancel}}
	err := getErr(t, ctx, srv.URL+"/t.wasm", Options{Timeout: time.Minute, HTTPClient: client}, context.Canceled)
	contains(t, err, "reading the body: cancelled")
}

// cancelOnRead cancels a context at the nth Read of a response body.
type cancelOnRead struct {
	rt     http.RoundTripper
	n      int
	cancel context.CancelFunc
}

func (c cancelOnRead) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: c.n, cancel: c.cancel}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	reads, n int
	cancel   context.CancelFunc
}

func (b *countingBody) Read(p []byte) (int, error) {
	if b.reads++; b.reads == b.n {
		b.cancel()
	}
	return b.ReadCloser.Read(p)
}

func TestGetEscapesServerText(t *testing.T) {
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "https://evil.example/\x1b[2J\x1b]0;pwned\x07")
		w.WriteHeader(http.StatusFound)
	}))
	getErr(t, context.Background(), srv.URL+"/t.wasm", Options{})
}

func TestGetDirMissing(t *testing.T) {
	srv := serve(t, bytesHandler(module(100)))
	_, err := Get(context.Background(), srv.URL+"/t.wasm", Options{Dir: filepath.Join(t.TempDir(), "nope")})
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v", err)
	}
}
