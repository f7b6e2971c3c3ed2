package mcpserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// health is /healthz's answer.
type health struct {
	code         int
	Status       string      `json:"status"`
	Ready        *bool       `json:"ready"`
	Tools        int         `json:"tools"`
	Loading      []string    `json:"loading"`
	LoadingTotal int         `json:"loading_total"`
	LoadErrors   []LoadError `json:"load_errors"`
}

func getHealth(t *testing.T, url string) health {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := health{code: resp.StatusCode}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatalf("GET %s: %d, body not JSON: %v", url, resp.StatusCode, err)
	}
	if h.Ready == nil {
		t.Fatalf("GET %s: no ready: %+v", url, h)
	}
	return h
}

// wantHealth checks /healthz and /healthz?ready against the state given
// (the code of /healthz; /healthz?ready's is 200 iff ready).
func wantHealth(t *testing.T, base, status string, ready bool, code int, loading []string, loadingTotal int) {
	t.Helper()
	readyCode := http.StatusServiceUnavailable
	if ready {
		readyCode = http.StatusOK
	}
	for path, wantCode := range map[string]int{PathHealthz: code, PathHealthz + "?ready": readyCode} {
		h := getHealth(t, base+path)
		if h.code != wantCode || h.Status != status || *h.Ready != ready ||
			fmt.Sprint(h.Loading) != fmt.Sprint(loading) || h.LoadingTotal != loadingTotal {
			t.Errorf("%s: %d %+v (ready %v), want %d status %s ready %v loading %v (%d)",
				path, h.code, h, *h.Ready, wantCode, status, ready, loading, loadingTotal)
		}
	}
}

// TestHealthzLoading: while the modules loading at start are not all in,
// /healthz says "loading", naming and counting them, and answers 200 (a
// liveness probe must not restart a server that is compiling), while
// /healthz?ready answers 503; once the last load ended both answer 200
// "ok" and ready. The modules are named at most MaxHealthLoading times.
func TestHealthzLoading(t *testing.T) {
	tools := &loadingTools{fakeTools: newFakeTools(desc("echo")), loading: []string{"slow1", "slow2"}, ended: make(chan struct{})}
	s, _ := newServer(t, tools, Options{})
	hs := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer hs.Close()

	wantHealth(t, hs.URL, HealthLoading, false, http.StatusOK, []string{"slow1", "slow2"}, 2)
	if h := getHealth(t, hs.URL+PathHealthz); h.Tools != 1 {
		t.Errorf("tools %d while loading, want 1 (echo is served)", h.Tools)
	}
	tools.finish("slow1")
	wantHealth(t, hs.URL, HealthLoading, false, http.StatusOK, []string{"slow2"}, 1)
	tools.finish("slow2")
	wantHealth(t, hs.URL, HealthOK, true, http.StatusOK, nil, 0)

	var many []string
	for i := range MaxHealthLoading + 5 {
		many = append(many, fmt.Sprintf("m%02d", i))
	}
	crowd := &loadingTools{fakeTools: newFakeTools(), loading: many, ended: make(chan struct{})}
	s2, _ := newServer(t, crowd, Options{})
	hs2 := httptest.NewServer(s2.Handler(HTTPOptions{}))
	defer hs2.Close()
	wantHealth(t, hs2.URL, HealthLoading, false, http.StatusOK, many[:MaxHealthLoading], len(many))
}

// startupTools is a StartupLoader whose start's load ends when the test
// says, with load errors.
type startupTools struct {
	*loadingTools
	started atomic.Bool
	errs    []LoadError
}

func (s *startupTools) options(opts Options) Options {
	opts = s.loadingTools.options(opts)
	opts.StartupLoaded = s.StartupLoaded
	opts.LoadErrors = s.LoadErrors
	return opts
}

func (s *startupTools) StartupLoaded() bool     { return s.started.Load() }
func (s *startupTools) LoadErrors() []LoadError { return s.errs }

// TestHealthzStartup: readiness follows the start's load (StartupLoader),
// not every load: a module loading after start (a file added) is named
// but the server stays ready; modules that failed while the rest load keep
// /healthz at 200 "loading"; once the start's load ended with no tool
// served, both forms answer 503 "degraded".
func TestHealthzStartup(t *testing.T) {
	failed := []LoadError{{Module: "bad", Error: "load bad.wasm: invalid module"}}
	tools := &startupTools{loadingTools: &loadingTools{fakeTools: newFakeTools(), loading: []string{"slow"}, ended: make(chan struct{})}, errs: failed}
	s, _ := newServer(t, tools, Options{})
	hs := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer hs.Close()

	wantHealth(t, hs.URL, HealthLoading, false, http.StatusOK, []string{"slow"}, 1)
	if h := getHealth(t, hs.URL+PathHealthz); len(h.LoadErrors) != 1 || h.LoadErrors[0] != failed[0] {
		t.Errorf("load errors while loading: %+v", h.LoadErrors)
	}
	tools.finish("slow")
	// Loading is empty, but the start's load has not said it ended.
	wantHealth(t, hs.URL, HealthLoading, false, http.StatusOK, nil, 0)
	// slow served a tool: degraded, ready.
	tools.started.Store(true)
	eventually(t, "slow's tool served", func() bool { return getHealth(t, hs.URL+PathHealthz).Tools == 1 })
	wantHealth(t, hs.URL, HealthDegraded, true, http.StatusOK, nil, 0)
	// A module added after start loads: named, still ready.
	tools.mu.Lock()
	tools.loading = []string{"added"}
	tools.mu.Unlock()
	wantHealth(t, hs.URL, HealthDegraded, true, http.StatusOK, []string{"added"}, 1)

	// Nothing served once the start's load ended: 503 on both.
	none := &startupTools{loadingTools: &loadingTools{fakeTools: newFakeTools(), ended: make(chan struct{})}, errs: failed}
	none.started.Store(true)
	s2, _ := newServer(t, none, Options{})
	hs2 := httptest.NewServer(s2.Handler(HTTPOptions{}))
	defer hs2.Close()
	wantHealth(t, hs2.URL, HealthDegraded, false, http.StatusServiceUnavailable, nil, 0)
}

// TestHealthzIsTerminalSafe: a load error quoting a module's text (a bidi
// override, a C1 control, a zero-width space) reaches /healthz's bytes
// escaped (\uXXXX), since the body is read with curl on a terminal, and
// decodes to the same text.
func TestHealthzIsTerminalSafe(t *testing.T) {
	const hostile = "load m.wasm: description \"a\u202eb\u009bc\u200bd\x1b[2J\""
	tools := &failingTools{fakeTools: newFakeTools(desc("a")), errs: []LoadError{{Module: "m\u2066", Error: hostile}}}
	s, _ := newServer(t, tools, Options{})
	hs := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer hs.Close()
	resp, err := http.Get(hs.URL + PathHealthz)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, c := range []string{"\u202e", "\u009b", "\u200b", "\x1b", "\u2066"} {
		if strings.Contains(string(raw), c) {
			t.Fatalf("%+q raw in /healthz: %s", c, raw)
		}
	}
	var h health
	if err := json.Unmarshal(raw, &h); err != nil || len(h.LoadErrors) != 1 || h.LoadErrors[0].Error != hostile || h.LoadErrors[0].Module != "m\u2066" {
		t.Fatalf("/healthz: %s (%v)", raw, err)
	}
}
