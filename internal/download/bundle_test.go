package download

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const bundleJSON = `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{},"messageSignature":{}}`

// files serves the given paths and 404 for the rest, recording the paths
// asked for.
type files struct {
	mu    sync.Mutex
	m     map[string]func(w http.ResponseWriter)
	asked []string
}

func (f *files) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.asked = append(f.asked, r.URL.RequestURI())
	h := f.m[r.URL.Path]
	f.mu.Unlock()
	if h == nil {
		http.NotFound(w, r)
		return
	}
	h(w)
}

func body(b string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) { w.Write([]byte(b)) }
}

func TestBundle(t *testing.T) {
	for name, c := range map[string]struct {
		m     map[string]func(http.ResponseWriter)
		asked []string
	}{
		"sigstore.json": {
			map[string]func(http.ResponseWriter){
				"/dl/tool.wasm.sigstore.json": body(bundleJSON),
				"/dl/tool.wasm.bundle":        body(`{"other":1}`),
			},
			[]string{"/dl/tool.wasm.sigstore.json?v=1"},
		},
		"bundle": {
			map[string]func(http.ResponseWriter){"/dl/tool.wasm.bundle": body(" \n" + bundleJSON)},
			[]string{"/dl/tool.wasm.sigstore.json?v=1", "/dl/tool.wasm.bundle?v=1"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := &files{m: c.m}
			srv := serve(t, f)
			b, err := Bundle(context.Background(), srv.URL+"/dl/tool.wasm?v=1", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "sigstore.bundle.v0.3") {
				t.Errorf("got %q", b)
			}
			if strings.Join(f.asked, " ") != strings.Join(c.asked, " ") {
				t.Errorf("asked for %q, want %q", f.asked, c.asked)
			}
		})
	}
}

func TestBundleNone(t *testing.T) {
	srv := serve(t, &files{})
	b, err := Bundle(context.Background(), srv.URL+"/tool.wasm", Options{})
	if b != nil || !errors.Is(err, ErrNoBundle) {
		t.Fatalf("got %q, %v; want ErrNoBundle", b, err)
	}
	contains(t, err, srv.URL+"/tool.wasm.sigstore.json", srv.URL+"/tool.wasm.bundle")
}

func TestBundleErrors(t *testing.T) {
	big := strings.Repeat(" ", MaxBundleBytes) + "{}"
	for name, c := range map[string]struct {
		h    func(http.ResponseWriter)
		want error
		says string
	}{
		"500": {func(w http.ResponseWriter) { w.WriteHeader(500) }, ErrStatus, "500 Internal Server Error"},
		"403": {func(w http.ResponseWriter) { w.WriteHeader(403) }, ErrStatus, "403 Forbidden"},
		"content-length": {func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			w.Write([]byte(big))
		}, ErrTooLarge, "1.0 MiB"},
		"streamed": {func(w http.ResponseWriter) {
			w.Write([]byte(big[:10]))
			w.(http.Flusher).Flush()
			w.Write([]byte(big[10:]))
		}, ErrTooLarge, "1.0 MiB"},
		"html":       {body("<html>soft 404</html>"), nil, "not a Sigstore bundle"},
		"json array": {body("[1]"), nil, "not a Sigstore bundle"},
		"bad json":   {body("{\"a\":"), nil, "not a Sigstore bundle"},
	} {
		t.Run(name, func(t *testing.T) {
			f := &files{m: map[string]func(http.ResponseWriter){
				"/tool.wasm.sigstore.json": c.h,
				"/tool.wasm.bundle":        body(bundleJSON),
			}}
			srv := serve(t, f)
			b, err := Bundle(context.Background(), srv.URL+"/tool.wasm", Options{})
			if err == nil {
				t.Fatalf("got %d bytes, want an error", len(b))
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("error %q does not wrap %q", err, c.want)
			}
			if errors.Is(err, ErrNoBundle) {
				t.Errorf("error %q wraps ErrNoBundle", err)
			}
			contains(t, err, c.says, srv.URL+"/tool.wasm.sigstore.json")
			if len(f.asked) != 1 {
				t.Errorf("asked for %q; an error other than 404 should stop the search", f.asked)
			}
		})
	}
}

func TestBundleURLRules(t *testing.T) {
	_, err := Bundle(context.Background(), "http://example.invalid/tool.wasm", Options{})
	if !errors.Is(err, ErrInsecure) {
		t.Fatalf("err %v, want ErrInsecure", err)
	}
	_, err = Bundle(context.Background(), "https://u:hunter2@example.invalid/tool.wasm", Options{})
	if !errors.Is(err, ErrInsecure) || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err %v, want ErrInsecure without the password", err)
	}

	other := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(bundleJSON)) }))
	target := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.Path, http.StatusFound)
	}))
	_, err = Bundle(context.Background(), srv.URL+"/tool.wasm", Options{})
	if !errors.Is(err, ErrRedirect) {
		t.Fatalf("err %v, want ErrRedirect", err)
	}
	contains(t, err, "tools.fetch.redirect_hosts: ["+strings.TrimPrefix(target, "http://")+"]")
	b, err := Bundle(context.Background(), srv.URL+"/tool.wasm",
		Options{AllowRedirectHosts: []string{strings.TrimPrefix(target, "http://")}})
	if err != nil || !bytes.Equal(b, []byte(bundleJSON)) {
		t.Fatalf("allowed: %q, %v", b, err)
	}
}
