package download

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/internal/wasmfile"
)

const (
	// DefaultMaxBytes bounds the downloaded file when Options.MaxBytes is 0.
	DefaultMaxBytes = limits.DefaultFetchMaxSize
	// DefaultTimeout bounds one download, headers and body, when
	// Options.Timeout is 0.
	DefaultTimeout = limits.DefaultFetchTimeout
	// MaxRedirects is how many redirects one request may follow.
	MaxRedirects = 5
	// MaxBundleBytes bounds a Sigstore bundle (they are a few KiB).
	MaxBundleBytes = 1 << 20
)

// Errors the functions wrap; test them with errors.Is. A file that is not a
// core WebAssembly module is refused with wasmfile.ErrNotWasm or
// wasmfile.ErrComponent, and a timeout or cancellation wraps
// context.DeadlineExceeded or context.Canceled.
var (
	ErrTooLarge = errors.New("download too large")
	ErrRedirect = errors.New("redirect refused")
	ErrInsecure = errors.New("insecure URL refused")
	ErrStatus   = errors.New("unexpected HTTP status")
	ErrNoBundle = errors.New("no Sigstore bundle published")
)

// Options configure Get and Bundle. The zero value is usable.
type Options struct {
	// Dir is where Get creates its temp file; "" is os.TempDir().
	Dir string
	// MaxBytes bounds the file (tools.fetch.max_size); 0 is DefaultMaxBytes.
	MaxBytes int64
	// Timeout bounds each request, from connecting to the last byte of the
	// body (tools.fetch.timeout); 0 is DefaultTimeout.
	Timeout time.Duration
	// AllowRedirectHosts are hosts (HOST, or HOST:PORT for a port other
	// than the scheme's default) a redirect may lead to besides the URL's
	// own (tools.fetch.redirect_hosts).
	AllowRedirectHosts []string
	// SameHostRedirect, when set, is asked about each redirect within the
	// URL's host, with the target's canonical form (CanonicalURL); an
	// error refuses the redirect. warden refuses one that leaves the
	// signature pattern the URL matched. A target with no canonical form
	// is refused before it is asked.
	SameHostRedirect func(canonicalURL string) error
	// HTTPClient carries the requests (its CheckRedirect is replaced by
	// warden's redirect policy); nil is a client with bounded dial, TLS
	// handshake and response-header times.
	HTTPClient *http.Client
}

// File is a downloaded core WebAssembly module.
type File struct {
	// Path is the temp file in Options.Dir holding it; the caller owns it
	// and removes or renames it.
	Path string
	// URL is the canonical form of the URL given (CanonicalURL), the one
	// requested; FinalURL is where the file came from after redirects
	// (chosen by the server: show it with ShowURL).
	URL      string
	FinalURL string
	// Size is its length in bytes and SHA256 its digest, lowercase hex.
	Size   int64
	SHA256 string
}

var defaultClient = &http.Client{
	Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          10,
		ForceAttemptHTTP2:     true,
	},
}

// Get downloads the core WebAssembly module at rawURL to a new temp file in
// opts.Dir (named .fetch-*.tmp), following the rules doc.go explains. On any
// error nothing is left in opts.Dir.
func Get(ctx context.Context, rawURL string, opts Options) (*File, error) {
	f, err := get(ctx, rawURL, opts)
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", ShowURL(rawURL), err)
	}
	return f, nil
}

func get(ctx context.Context, rawURL string, opts Options) (_ *File, err error) {
	u, err := parseCanonical(rawURL)
	if err != nil {
		return nil, err
	}
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	dir := opts.Dir
	if dir == "" {
		dir = os.TempDir()
	}

	r, err := open(ctx, u, opts)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := r.status(); err != nil {
		return nil, err
	}
	if cl := r.resp.ContentLength; cl > limit {
		return nil, tooLarge(limit, "the server says the file is "+size(cl))
	}

	tmp, err := os.CreateTemp(dir, ".fetch-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("creating a temp file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()

	body := &reader{r: io.LimitReader(r.resp.Body, limit+1)}
	head := make([]byte, 8)
	n, rerr := io.ReadFull(body, head)
	if rerr != nil && rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
		return nil, r.explain("reading the body", rerr)
	}
	if err := wasmfile.Check(head[:n], "the file at "+show(r.final())); err != nil {
		return nil, err
	}
	h := sha256.New()
	w := io.MultiWriter(tmp, h)
	if _, err := w.Write(head); err != nil {
		return nil, fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	m, err := io.Copy(w, body)
	if err != nil {
		if body.err != nil {
			return nil, r.explain("reading the body", body.err)
		}
		return nil, fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	total := int64(n) + m
	if total > limit {
		return nil, tooLarge(limit, "the server sent more")
	}
	if err := tmp.Sync(); err != nil {
		return nil, fmt.Errorf("syncing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("closing %s: %w", tmp.Name(), err)
	}
	return &File{
		Path:     tmp.Name(),
		URL:      u.String(),
		FinalURL: r.final().String(),
		Size:     total,
		SHA256:   hex.EncodeToString(h.Sum(nil)),
	}, nil
}

func tooLarge(limit int64, why string) error {
	return fmt.Errorf("%w: the limit is %s and %s; if the tool really is that big, raise "+
		"tools.fetch.max_size in config.yaml", ErrTooLarge, size(limit), why)
}

func size(n int64) string {
	if n < 0 {
		return fmt.Sprintf("%d bytes", n)
	}
	s := humanize.IBytes(uint64(n))
	if back, err := humanize.ParseBytes(s); err != nil || back != uint64(n) {
		s += fmt.Sprintf(" (%d bytes)", n)
	}
	return s
}

// Bundle fetches the Sigstore bundle published next to the file at rawURL:
// rawURL+".sigstore.json" (what current cosign docs and the Sigstore
// clients name it), else rawURL+".bundle" (cosign's older examples). The
// URL rules of Get apply; the bundle is bounded at MaxBundleBytes and must
// be a JSON object. When both answer 404 the error is ErrNoBundle.
func Bundle(ctx context.Context, rawURL string, opts Options) ([]byte, error) {
	u, err := parseCanonical(rawURL)
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", ShowURL(rawURL), err)
	}
	var tried []string
	for _, suffix := range []string{".sigstore.json", ".bundle"} {
		bu := *u
		bu.Path += suffix
		if bu.RawPath != "" {
			bu.RawPath += suffix
		}
		b, err := getBundle(ctx, &bu, opts)
		var se *statusError
		if errors.As(err, &se) && se.code == http.StatusNotFound {
			tried = append(tried, show(&bu))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("download %s: %w", show(&bu), err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("%w: neither %s nor %s exists (404)", ErrNoBundle, tried[0], tried[1])
}

func getBundle(ctx context.Context, u *url.URL, opts Options) ([]byte, error) {
	r, err := open(ctx, u, opts)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := r.status(); err != nil {
		return nil, err
	}
	tooBig := func() error {
		return fmt.Errorf("%w: the bundle is larger than %s (a Sigstore bundle is a few KiB)", ErrTooLarge, size(MaxBundleBytes))
	}
	if r.resp.ContentLength > MaxBundleBytes {
		return nil, tooBig()
	}
	b, err := io.ReadAll(io.LimitReader(r.resp.Body, MaxBundleBytes+1))
	if err != nil {
		return nil, r.explain("reading the bundle", err)
	}
	if len(b) > MaxBundleBytes {
		return nil, tooBig()
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' || !json.Valid(b) {
		n := min(len(b), 8)
		return nil, fmt.Errorf("the file at %s is not a Sigstore bundle, which is a JSON object (first bytes % x)",
			show(r.final()), b[:n])
	}
	return b, nil
}

// response is an open response and what explains its errors.
type response struct {
	resp    *http.Response
	parent  context.Context
	ctx     context.Context
	cancel  context.CancelFunc
	timeout time.Duration
}

var errTimedOut = errors.New("download timed out")

// open sends a GET for u (already checked by checkURL) under opts' redirect
// policy and timeout. The caller closes the response.
func open(parent context.Context, u *url.URL, opts Options) (*response, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeoutCause(parent, timeout, errTimedOut)
	r := &response{parent: parent, ctx: ctx, cancel: cancel, timeout: timeout}

	base := opts.HTTPClient
	if base == nil {
		base = defaultClient
	}
	client := *base
	client.CheckRedirect = (&redirectPolicy{orig: u, allow: opts.AllowRedirectHosts, sameHost: opts.SameHostRedirect}).check

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		cancel()
		return nil, &safeError{err}
	}
	req.Header.Set("User-Agent", "warden")
	// The bytes as served, so that the digest is of what the server holds
	// and no decompression runs on a stranger's input.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := client.Do(req)
	if err != nil {
		e := r.explain("requesting it", err)
		cancel()
		return nil, e
	}
	r.resp = resp
	return r, nil
}

func (r *response) close() {
	r.resp.Body.Close()
	r.cancel()
}

// final is the URL the response came from, after redirects.
func (r *response) final() *url.URL { return r.resp.Request.URL }

type statusError struct {
	code int
	url  string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s: the server answered %d %s for %s (want 200)",
		ErrStatus, e.code, http.StatusText(e.code), e.url)
}

func (e *statusError) Unwrap() error { return ErrStatus }

func (r *response) status() error {
	if r.resp.StatusCode == http.StatusOK {
		return nil
	}
	// The reason phrase (resp.Status) is the server's; the code's own
	// name is shown instead.
	return &statusError{code: r.resp.StatusCode, url: show(r.final())}
}

// explain turns an error of the request or its body into one that says
// what happened: a timeout, a cancellation, a refused redirect, or the
// transport's error escaped by termsafe.
func (r *response) explain(doing string, err error) error {
	if r.parent.Err() != nil {
		return fmt.Errorf("%s: cancelled: %w", doing, context.Cause(r.parent))
	}
	if context.Cause(r.ctx) == errTimedOut {
		return fmt.Errorf("%s: timed out after %v (the limit on the whole download, body included); "+
			"for a slow server, raise tools.fetch.timeout in config.yaml: %w", doing, r.timeout, context.DeadlineExceeded)
	}
	var pe *policyError
	if errors.As(err, &pe) {
		return pe
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its message repeats the URL, unescaped
	}
	return fmt.Errorf("%s: %w", doing, &safeError{err})
}

// reader remembers the error of its reader, to tell a failed read from a
// failed write after io.Copy.
type reader struct {
	r   io.Reader
	err error
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}
