package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/runtime/internal/manifest"
	"github.com/warden-run/warden/tool"
)

// openFixture opens wasm as name in a runtime over cacheDir and fails the
// test on error.
func openFixture(t *testing.T, rt *runtime.Runtime, name string, wasm []byte, opts runtime.OpenOptions) *runtime.Module {
	t.Helper()
	m, err := rt.Open(context.Background(), name, wasm, runtime.Limits{}, opts)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

func wantPong(t *testing.T, tl *runtime.Tool) {
	t.Helper()
	res := tl.Call(context.Background(), runtime.CallRequest{Arguments: json.RawMessage(`{}`)})
	if res.IsError || len(res.Content) != 1 || res.Content[0].Text != "pong" {
		t.Fatalf("call %s: %+v (error %v)", tl.Descriptor.Name, res.Content, res.Error)
	}
}

// warmCache fills cacheDir with name's manifest (and compiled code).
func warmCache(t *testing.T, cacheDir, name string, wasm []byte) string {
	t.Helper()
	rt := newRuntime(t, runtime.Options{CacheDir: cacheDir})
	m := openFixture(t, rt, name, wasm, runtime.OpenOptions{})
	if rt.BodyLoads() != 1 || !m.Loaded() {
		t.Fatalf("a cold open did %d loads (loaded %v), want 1", rt.BodyLoads(), m.Loaded())
	}
	file := runtime.ManifestFile(m)
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("no manifest stored: %v", err)
	}
	return file
}

func TestOpenWarmListsToolsWithoutLoading(t *testing.T) {
	dir := t.TempDir()
	wasm := watFixture{name: "ping"}.build(t)
	warmCache(t, dir, "ping", wasm)

	rt := newRuntime(t, runtime.Options{CacheDir: dir})
	m := openFixture(t, rt, "ping", wasm, runtime.OpenOptions{})
	if rt.BodyLoads() != 0 || m.Loaded() {
		t.Fatalf("a warm open did %d loads (loaded %v), want none", rt.BodyLoads(), m.Loaded())
	}
	if len(m.Tools()) != 1 || m.Tools()[0].Descriptor.Name != "ping" || !slicesContain(m.Exports(), "warden_call") {
		t.Fatalf("tools %v exports %v", m.Tools(), m.Exports())
	}
	wantPong(t, m.Tools()[0])
	if rt.BodyLoads() != 1 || !m.Loaded() {
		t.Fatalf("first call did %d loads, want 1", rt.BodyLoads())
	}
	wantPong(t, m.Tools()[0])
	if rt.BodyLoads() != 1 {
		t.Fatalf("second call loaded again (%d loads)", rt.BodyLoads())
	}
}

func slicesContain(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestOpenRefusesDamagedManifest: a manifest flipped, truncated, made for
// other bytes or with a wrong checksum is never served: it is logged
// (naming the file), deleted, and the module is loaded and described anew.
func TestOpenRefusesDamagedManifest(t *testing.T) {
	wasm := watFixture{name: "ping"}.build(t)
	other := watFixture{name: "other"}.build(t)
	reencode := func(data []byte, edit func(*manifest.Manifest)) []byte {
		m, err := manifest.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		edit(m)
		out, err := manifest.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for name, damage := range map[string]func([]byte) []byte{
		"flipped byte": func(d []byte) []byte { d[len(d)/2] ^= 1; return d },
		"truncated":    func(d []byte) []byte { return d[:len(d)-7] },
		"wrong sha": func(d []byte) []byte {
			return reencode(d, func(m *manifest.Manifest) { m.ModuleSHA256 = strings.Repeat("0", 64) })
		},
		"wrong checksum": func(d []byte) []byte { d[len(d)-1] ^= 0x80; return d },
		// A valid manifest whose descriptor claims a tool the module does
		// not have: re-encoding makes the checksum right, the sha check
		// still refuses it because the sha is recomputed from other bytes.
		"descriptor of another module": func(d []byte) []byte {
			return reencode(d, func(m *manifest.Manifest) {
				m.Descriptor = []byte(`{"tools":[{"name":"impostor","description":"x","inputSchema":{"type":"object"}}]}`)
				sum := strings.Repeat("1", 64)
				m.ModuleSHA256 = sum
			})
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			file := warmCache(t, dir, "ping", wasm)
			data, _ := os.ReadFile(file)
			os.WriteFile(file, damage(data), 0o600)

			var logs bytes.Buffer
			rt := newRuntime(t, runtime.Options{CacheDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			m := openFixture(t, rt, "ping", wasm, runtime.OpenOptions{})
			if rt.BodyLoads() != 1 {
				t.Fatalf("damaged manifest served: %d loads", rt.BodyLoads())
			}
			if len(m.Tools()) != 1 || m.Tools()[0].Descriptor.Name != "ping" {
				t.Fatalf("tools %v", m.Tools())
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), file) {
				t.Errorf("no warning naming %s:\n%s", file, logs.String())
			}
			// Rebuilt: the next start serves it again without a load.
			rebuilt, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := manifest.Decode(rebuilt); err != nil {
				t.Fatalf("rebuilt manifest: %v", err)
			}
			wantPong(t, m.Tools()[0])
		})
	}
	// The manifest of one module is never served for another's bytes, even
	// when copied under the other's key.
	t.Run("another module's manifest", func(t *testing.T) {
		dir := t.TempDir()
		file := warmCache(t, dir, "ping", wasm)
		otherFile := warmCache(t, t.TempDir(), "ping", other)
		data, _ := os.ReadFile(otherFile)
		os.WriteFile(file, data, 0o600)
		rt := newRuntime(t, runtime.Options{CacheDir: dir})
		m := openFixture(t, rt, "ping", wasm, runtime.OpenOptions{})
		if rt.BodyLoads() != 1 || m.Tools()[0].Descriptor.Name != "ping" {
			t.Fatalf("served another module's manifest: %d loads, tools %v", rt.BodyLoads(), m.Tools())
		}
	})
}

// TestOpenKeyCoversLimits: a manifest made under other load limits is not
// used (the same bytes may load differently).
func TestOpenKeyCoversLimits(t *testing.T) {
	dir := t.TempDir()
	wasm := watFixture{name: "ping"}.build(t)
	warmCache(t, dir, "ping", wasm)
	rt := newRuntime(t, runtime.Options{CacheDir: dir})
	if _, err := rt.Open(context.Background(), "ping", wasm, runtime.Limits{Fuel: 12345}, runtime.OpenOptions{CachedOnly: true}); !errors.Is(err, runtime.ErrNotCached) {
		t.Fatalf("manifest of other limits used: %v", err)
	}
	if _, err := rt.Open(context.Background(), "ping", wasm, runtime.Limits{}, runtime.OpenOptions{CachedOnly: true}); err != nil {
		t.Fatalf("manifest of the same limits not used: %v", err)
	}
}

// gate stops lazy loads at their start until opened, and counts the
// callers that reached the point where they wait for a load.
type gate struct {
	started chan string
	open    chan struct{}
	joined  chan string
}

func newGate(rt *runtime.Runtime) *gate {
	g := &gate{started: make(chan string, 16), open: make(chan struct{}), joined: make(chan string, 64)}
	runtime.SetLoadHooks(rt,
		func(m string) { g.started <- m; <-g.open },
		func(m string) { g.joined <- m })
	return g
}

func warmRuntime(t *testing.T, name string) (*runtime.Runtime, *gate, *runtime.Module) {
	dir := t.TempDir()
	wasm := watFixture{name: name}.build(t)
	warmCache(t, dir, name, wasm)
	rt := newRuntime(t, runtime.Options{CacheDir: dir})
	g := newGate(rt)
	return rt, g, openFixture(t, rt, name, wasm, runtime.OpenOptions{})
}

func TestConcurrentFirstCallsLoadOnce(t *testing.T) {
	rt, g, m := warmRuntime(t, "ping")
	const callers = 6
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() { wantPong(t, m.Tools()[0]) })
	}
	for range callers {
		<-g.joined // every caller is waiting for a load
	}
	<-g.started // and exactly one load started
	close(g.open)
	wg.Wait()
	if n := rt.BodyLoads(); n != 1 {
		t.Fatalf("%d concurrent first calls did %d loads, want 1", callers, n)
	}
	select {
	case <-g.started:
		t.Fatal("a second load started")
	default:
	}
}

// TestCallJoinsBackgroundLoad: a call made while Preload's load is under
// way (stopped at its start) waits for that load instead of starting its
// own, and hears progress while it waits.
func TestCallJoinsBackgroundLoad(t *testing.T) {
	rt, g, m := warmRuntime(t, "ping")
	preloaded := make(chan error, 1)
	go func() { preloaded <- m.Preload(context.Background()) }()
	<-g.joined
	<-g.started // the background load is running, stopped at its start
	obs := &progressLog{}
	done := make(chan *tool.Result, 1)
	go func() {
		done <- m.Tools()[0].Call(context.Background(), runtime.CallRequest{Observer: obs})
	}()
	<-g.joined // the call waits for the same load
	close(g.open)
	if res := <-done; res.IsError {
		t.Fatalf("call: %v", res.Error)
	}
	if err := <-preloaded; err != nil {
		t.Fatal(err)
	}
	if n := rt.BodyLoads(); n != 1 {
		t.Fatalf("%d loads, want 1", n)
	}
	if first := obs.first(); !strings.Contains(first, "loading module ping") {
		t.Fatalf("first progress while waiting: %q", first)
	}
}

type progressLog struct {
	mu       sync.Mutex
	messages []string
}

func (p *progressLog) Progress(pr tool.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.messages = append(p.messages, pr.Message)
}
func (p *progressLog) Log(slog.Level, string) {}
func (p *progressLog) first() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.messages) == 0 {
		return ""
	}
	return p.messages[0]
}

// TestWaitingCallerCancels: a caller that gives up while the load runs gets
// cancelled; the load goes on and the next call uses it.
func TestWaitingCallerCancels(t *testing.T) {
	rt, g, m := warmRuntime(t, "ping")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *tool.Result, 1)
	go func() { done <- m.Tools()[0].Call(ctx, runtime.CallRequest{}) }()
	<-g.joined
	<-g.started
	cancel()
	res := <-done
	if !res.IsError || res.Error.Kind != tool.KindCancelled || !strings.Contains(res.Error.Message, "waiting for module ping to load") {
		t.Fatalf("cancelled wait: %+v", res.Error)
	}
	close(g.open)
	wantPong(t, m.Tools()[0])
	if n := rt.BodyLoads(); n != 1 {
		t.Fatalf("%d loads, want 1", n)
	}
}

// TestLoadedModuleIsNeverReleased: a module from Load keeps no bytes to
// load again from, so its body stays until Close, however idle.
func TestLoadedModuleIsNeverReleased(t *testing.T) {
	rt := newRuntime(t, runtime.Options{CacheDir: "off"})
	tl := loadTool(t, rt, "ping", watFixture{name: "ping"}.build(t), runtime.Limits{})
	m := tl.Module()
	wantPong(t, tl)
	if m.ReleaseIdle(time.Now().Add(24*time.Hour), time.Minute) || !m.Loaded() {
		t.Fatalf("released (loaded %v)", m.Loaded())
	}
	wantPong(t, tl)
}

func TestIdleRelease(t *testing.T) {
	rt, g, m := warmRuntime(t, "ping")
	close(g.open)
	wantPong(t, m.Tools()[0])
	if !m.Loaded() || m.Live() == 0 {
		t.Fatalf("loaded %v live %d after a call", m.Loaded(), m.Live())
	}
	const ttl = 10 * time.Minute
	if m.ReleaseIdle(time.Now(), ttl) {
		t.Fatal("released a module used just now")
	}
	if !m.ReleaseIdle(time.Now().Add(ttl), ttl) {
		t.Fatal("not released after the ttl")
	}
	if m.Loaded() || m.Live() != 0 {
		t.Fatalf("after release: loaded %v live %d", m.Loaded(), m.Live())
	}
	if m.ReleaseIdle(time.Now().Add(2*ttl), 0) {
		t.Fatal("ttl 0 released")
	}
	wantPong(t, m.Tools()[0])
	if n := rt.BodyLoads(); n != 2 {
		t.Fatalf("%d loads, want 2 (first call, call after the release)", n)
	}
}

// TestLazyLoadFailure: a module whose bytes changed between listing and its
// first call is refused with an error naming it and the cause, once for
// every caller, and LoadFailed hears of it once.
func TestLazyLoadFailure(t *testing.T) {
	dir := t.TempDir()
	wasm := watFixture{name: "ping"}.build(t)
	file := warmCache(t, dir, "ping", wasm)
	rt := newRuntime(t, runtime.Options{CacheDir: dir})
	var failures atomic.Int32
	m := openFixture(t, rt, "ping", wasm, runtime.OpenOptions{
		Read:       func() ([]byte, error) { return watFixture{name: "pong"}.build(t), nil },
		LoadFailed: func(*runtime.Module, error) { failures.Add(1) },
	})
	for range 2 {
		res := m.Tools()[0].Call(context.Background(), runtime.CallRequest{})
		if !res.IsError || res.Error.Kind != tool.KindInternal ||
			!strings.Contains(res.Error.Message, "module ping failed to load") || !strings.Contains(res.Error.Message, "file changed") {
			t.Fatalf("call: %+v", res.Error)
		}
	}
	if failures.Load() != 1 {
		t.Fatalf("LoadFailed called %d times", failures.Load())
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("manifest of a module that failed to load kept: %v", err)
	}
	// Another tool still works.
	other := openFixture(t, rt, "other", watFixture{name: "other"}.build(t), runtime.OpenOptions{})
	wantPong(t, other.Tools()[0])
}

// TestUnreadableFileRetried: a module listed from its manifest whose file
// cannot be read at its first call (removed, then replaced by a
// directory) fails that call as unavailable, naming the file and the
// operating system's reason, for every caller waiting on that load; the
// module is not given up (no LoadFailed, its manifest kept), and once the
// file is back the next call loads it and works.
func TestUnreadableFileRetried(t *testing.T) {
	dir := t.TempDir()
	wasm := watFixture{name: "ping"}.build(t)
	manifestFile := warmCache(t, dir, "ping", wasm)
	file := filepath.Join(t.TempDir(), "ping.wasm")
	if err := os.WriteFile(file, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, runtime.Options{CacheDir: dir})
	g := newGate(rt)
	var failures atomic.Int32
	m, err := rt.OpenFile(context.Background(), "ping", file, runtime.Limits{}, runtime.OpenOptions{
		LoadFailed: func(*runtime.Module, error) { failures.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	if m.Loaded() || rt.BodyLoads() != 0 {
		t.Fatal("a module with a manifest was loaded at open")
	}
	tl := m.Tools()[0]
	wantUnavailable := func(res *tool.Result, reason string) {
		t.Helper()
		want := fmt.Sprintf("ping: module ping cannot load: its file %s cannot be read (%s); the next call reads it again, so making it readable needs no restart", file, reason)
		if !res.IsError || res.Error.Kind != tool.KindUnavailable || res.Error.Message != want {
			t.Fatalf("call: %+v, want unavailable: %s", res.Error, want)
		}
	}

	// Removed: two callers wait on the same load, which fails for both.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	results := make(chan *tool.Result, 2)
	for range 2 {
		go func() { results <- tl.Call(context.Background(), runtime.CallRequest{}) }()
	}
	<-g.joined
	<-g.joined
	<-g.started
	g.open <- struct{}{}
	for range 2 {
		wantUnavailable(<-results, "open: no such file or directory")
	}

	// Replaced by a directory: the next call tries again, and fails again.
	if err := os.Mkdir(file, 0o755); err != nil {
		t.Fatal(err)
	}
	go func() { <-g.started; g.open <- struct{}{} }()
	wantUnavailable(tl.Call(context.Background(), runtime.CallRequest{}), "read: is a directory")
	if failures.Load() != 0 {
		t.Fatalf("LoadFailed called %d times for a file that could not be read", failures.Load())
	}
	if _, err := os.Stat(manifestFile); err != nil {
		t.Fatalf("manifest of a module whose file could not be read dropped: %v", err)
	}

	// Back: the next call loads it, without a restart.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	close(g.open)
	wantPong(t, tl)
	if n := rt.BodyLoads(); n != 1 {
		t.Fatalf("%d loads, want 1 (the unreadable file loaded nothing)", n)
	}
}

// TestForgedManifestCaughtAtFirstCall: a manifest rewritten with a valid
// checksum, for the module's own sha256 and key, lists what it claims (the
// checksum is no signature), but the module's first load compares its
// descriptor and refuses the module instead of running it under a false
// description.
func TestForgedManifestCaughtAtFirstCall(t *testing.T) {
	dir := t.TempDir()
	wasm := watFixture{name: "ping"}.build(t)
	file := warmCache(t, dir, "ping", wasm)
	data, _ := os.ReadFile(file)
	mf, err := manifest.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	mf.Descriptor = bytes.Replace(mf.Descriptor, []byte(`"fixture"`), []byte(`"trust me"`), 1)
	forged, _ := manifest.Encode(mf)
	os.WriteFile(file, forged, 0o600)

	rt := newRuntime(t, runtime.Options{CacheDir: dir})
	var failed error
	m := openFixture(t, rt, "ping", wasm, runtime.OpenOptions{LoadFailed: func(_ *runtime.Module, err error) { failed = err }})
	if m.Tools()[0].Descriptor.Description != "trust me" {
		t.Fatalf("the test's forgery did not take: %q", m.Tools()[0].Descriptor.Description)
	}
	res := m.Tools()[0].Call(context.Background(), runtime.CallRequest{})
	if !res.IsError || res.Error.Kind != tool.KindInternal || !strings.Contains(res.Error.Message, "describes itself differently") {
		t.Fatalf("call: %+v", res.Error)
	}
	if failed == nil {
		t.Fatal("LoadFailed not called")
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatal("forged manifest kept")
	}
}

// TestManifestKindIsTheLoaders: the kind a manifest records is the one the
// loader that accepted the module decided (guest.Loaded.Kind): native for
// a native module; an Extism plugin's is TestOpenExtismFromManifest's.
func TestManifestKindIsTheLoaders(t *testing.T) {
	file := warmCache(t, t.TempDir(), "ping", watFixture{name: "ping"}.build(t))
	data, _ := os.ReadFile(file)
	if mf, err := manifest.Decode(data); err != nil || mf.Kind != manifest.KindNative {
		t.Fatalf("manifest: %+v, %v", mf, err)
	}
}

// TestOpenExtismFromManifest: an Extism plugin is listed from its manifest
// too (kind extism, its rejected tool derived again) and loads through its
// own loader on first call.
func TestOpenExtismFromManifest(t *testing.T) {
	dir := t.TempDir()
	wasm := extismWAT(t, descOf("good", "bad name"), `{"content":[{"type":"text","text":"hi"}]}`, "")
	file := warmCache(t, dir, "plugin", wasm)
	data, _ := os.ReadFile(file)
	if mf, err := manifest.Decode(data); err != nil || mf.Kind != manifest.KindExtism || len(mf.Rejected) != 1 {
		t.Fatalf("manifest: %+v, %v", mf, err)
	}
	rt := newRuntime(t, runtime.Options{CacheDir: dir})
	m := openFixture(t, rt, "plugin", wasm, runtime.OpenOptions{})
	if rt.BodyLoads() != 0 || len(m.Tools()) != 1 || len(m.Rejected()) != 1 || m.Rejected()[0].Name != "bad name" {
		t.Fatalf("%d loads, tools %v, rejected %v", rt.BodyLoads(), m.Tools(), m.Rejected())
	}
	wantOK(t, call(t, m.Tools()[0], `{}`), "hi")
	if rt.BodyLoads() != 1 {
		t.Fatalf("%d loads, want 1", rt.BodyLoads())
	}
}

// TestManifestRefusedByDescriptorRules: a well-formed manifest whose
// descriptor this warden's rules refuse is not listed: the module is
// loaded and described again.
func TestManifestRefusedByDescriptorRules(t *testing.T) {
	dir := t.TempDir()
	wasm := watFixture{name: "ping"}.build(t)
	file := warmCache(t, dir, "ping", wasm)
	data, _ := os.ReadFile(file)
	mf, _ := manifest.Decode(data)
	mf.Descriptor = []byte(`{"tools":[{"name":"bad name"}]}`)
	forged, _ := manifest.Encode(mf)
	os.WriteFile(file, forged, 0o600)
	rt := newRuntime(t, runtime.Options{CacheDir: dir})
	m := openFixture(t, rt, "ping", wasm, runtime.OpenOptions{})
	if rt.BodyLoads() != 1 || len(m.Tools()) != 1 || m.Tools()[0].Descriptor.Name != "ping" || len(m.Rejected()) != 0 {
		t.Fatalf("%d loads, tools %v, rejected %v", rt.BodyLoads(), m.Tools(), m.Rejected())
	}
}
