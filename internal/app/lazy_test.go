package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/catalog"
	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/tool"
)

// watTool is a module with one tool, name, that answers reply to any call.
func watTool(t *testing.T, name, reply string) []byte {
	t.Helper()
	desc := fmt.Sprintf(`{"tools":[{"name":%q,"description":"lazy fixture","inputSchema":{"type":"object"}}]}`, name)
	resp := fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, reply)
	return testwasm.WATString(t, fmt.Sprintf(`(module
  (memory (export "memory") 1)
  (global $next (mut i32) (i32.const 8192))
  (func (export "warden_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $next))
    (global.set $next (i32.add (global.get $next) (local.get $size)))
    (local.get $ptr))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (data (i32.const 16) %q)
  (data (i32.const 4096) %q)
  (func (export "warden_describe") (result i64) (i64.const %d))
  (func (export "warden_call") (param i64) (result i64) (i64.const %d)))`,
		desc, resp, uint64(16)<<32|uint64(len(desc)), uint64(4096)<<32|uint64(len(resp))))
}

// lazyWorld is a tools dir with modules and a private cache dir.
type lazyWorld struct {
	dir, tools, cache string
}

func newLazyWorld(t *testing.T, modules map[string][]byte) *lazyWorld {
	w := &lazyWorld{dir: t.TempDir()}
	w.tools, w.cache = filepath.Join(w.dir, "tools"), filepath.Join(w.dir, "cache")
	os.MkdirAll(w.tools, 0o755)
	for name, wasm := range modules {
		w.put(t, name, wasm)
	}
	return w
}

func (w *lazyWorld) put(t *testing.T, name string, wasm []byte) {
	if err := os.WriteFile(filepath.Join(w.tools, name+".wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (w *lazyWorld) config(extra string) string {
	return fmt.Sprintf("project: {root: %s}\ntools:\n  dir: tools\n  cache_dir: %s\n%s", w.dir, w.cache, extra)
}

// start starts an app on w and loads its tools, as `warden serve` or
// `warden tools` would.
func (w *lazyWorld) start(t *testing.T, extra string, logs *syncBuffer) (*App, []error) {
	t.Helper()
	a, _ := startApp(t, w.dir, w.config(extra), logs)
	return a, a.Catalog().LoadTools(context.Background())
}

func listed(a *App) []string {
	var names []string
	for _, d := range a.List() {
		names = append(names, d.Name)
	}
	return names
}

func wantReply(t *testing.T, a *App, name, reply string) {
	t.Helper()
	res := call(t, a, name, `{}`)
	if res.IsError || len(res.Content) != 1 || res.Content[0].Text != reply {
		t.Fatalf("call %s: %+v %v", name, res.Content, res.Error)
	}
}

// TestWarmStartCompilesNothing: the second start lists every tool from the
// manifests without one load; the first call loads only its module.
func TestWarmStartCompilesNothing(t *testing.T) {
	w := newLazyWorld(t, map[string][]byte{
		"alpha": watTool(t, "alpha", "a"), "beta": watTool(t, "beta", "b"), "gamma": watTool(t, "gamma", "c"),
	})
	cold, errs := w.start(t, "", nil)
	if len(errs) > 0 || cold.Runtime().BodyLoads() != 3 {
		t.Fatalf("cold start: %v, %d loads", errs, cold.Runtime().BodyLoads())
	}
	cold.Close(context.Background())

	warm, errs := w.start(t, "", nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if n := warm.Runtime().BodyLoads(); n != 0 {
		t.Fatalf("warm start did %d loads, want 0", n)
	}
	if got := listed(warm); !slices.Equal(got, []string{"alpha", "beta", "gamma"}) {
		t.Fatalf("listed %v", got)
	}
	wantReply(t, warm, "beta", "b")
	if n := warm.Runtime().BodyLoads(); n != 1 {
		t.Fatalf("a first call did %d loads, want 1", n)
	}
}

// TestReplacedWhileManifestCached: a module replaced between two starts,
// its old manifest still cached, is refused by its pin when pinned, and
// loaded with its new descriptors when not.
func TestReplacedWhileManifestCached(t *testing.T) {
	v1, v2 := watTool(t, "alpha", "v1"), watTool(t, "alpha2", "v2")
	t.Run("pinned", func(t *testing.T) {
		w := newLazyWorld(t, map[string][]byte{"alpha": v1, "other": watTool(t, "other", "o")})
		pins := fmt.Sprintf("  pins: {alpha: %s}\n", sha(v1))
		first, errs := w.start(t, pins, nil)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		first.Close(context.Background())
		w.put(t, "alpha", v2)
		a, errs := w.start(t, pins, nil)
		if len(errs) != 1 || !errors.Is(errs[0], catalog.ErrPinMismatch) {
			t.Fatalf("errors %v, want the pin mismatch", errs)
		}
		if got := listed(a); !slices.Equal(got, []string{"other"}) {
			t.Fatalf("listed %v", got)
		}
		if n := a.Runtime().BodyLoads(); n != 0 {
			t.Fatalf("a refused module was loaded (%d loads)", n)
		}
		wantReply(t, a, "other", "o")
	})
	t.Run("unpinned", func(t *testing.T) {
		w := newLazyWorld(t, map[string][]byte{"alpha": v1})
		first, _ := w.start(t, "", nil)
		first.Close(context.Background())
		w.put(t, "alpha", v2)
		a, errs := w.start(t, "", nil)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if got := listed(a); !slices.Equal(got, []string{"alpha2"}) {
			t.Fatalf("listed %v, want the new version's tool", got)
		}
		wantReply(t, a, "alpha2", "v2")
	})
}

// TestFileChangedBeforeFirstCall: a module listed from its manifest whose
// file changes before its first call (no watcher) is not run: the call
// fails naming the module and the cause, the module is unlisted and its
// error kept, and the other modules keep working.
func TestFileChangedBeforeFirstCall(t *testing.T) {
	w := newLazyWorld(t, map[string][]byte{"alpha": watTool(t, "alpha", "a"), "beta": watTool(t, "beta", "b")})
	first, _ := w.start(t, "", nil)
	first.Close(context.Background())
	a, _ := w.start(t, "", nil)
	changed := make(chan struct{}, 4)
	cancel := a.Subscribe(func() { changed <- struct{}{} })
	defer cancel()
	w.put(t, "alpha", watTool(t, "alpha", "impostor"))
	res := call(t, a, "alpha", `{}`)
	if !res.IsError || res.Error.Kind != tool.KindInternal ||
		!strings.Contains(res.Error.Message, "module alpha failed to load") || !strings.Contains(res.Error.Message, "file changed") {
		t.Fatalf("call: %+v", res.Error)
	}
	<-changed // clients hear the list changed
	if got := listed(a); !slices.Equal(got, []string{"beta"}) {
		t.Fatalf("listed %v", got)
	}
	loadErr := loadErrorOf(a, "alpha")
	if loadErr == nil || !strings.Contains(loadErr.Error(), "file changed") {
		t.Fatalf("load error kept: %v", loadErr)
	}
	wantReply(t, a, "beta", "b")
}

// TestFileUnreadableAtFirstCall: a module listed from its manifest whose
// file cannot be read at its first call (here: replaced by a directory) is
// not given up: the call fails as unavailable naming the file and why,
// the module stays listed with no load error kept, and once the file is
// back the next call works, without a restart.
func TestFileUnreadableAtFirstCall(t *testing.T) {
	w := newLazyWorld(t, map[string][]byte{"alpha": watTool(t, "alpha", "a"), "beta": watTool(t, "beta", "b")})
	first, _ := w.start(t, "", nil)
	first.Close(context.Background())
	a, _ := w.start(t, "", nil)
	file := filepath.Join(w.tools, "alpha.wasm")
	wasm, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(file, 0o755); err != nil {
		t.Fatal(err)
	}
	res := call(t, a, "alpha", `{}`)
	want := fmt.Sprintf("alpha: module alpha cannot load: its file %s cannot be read (read: is a directory); the next call reads it again, so making it readable needs no restart", file)
	if !res.IsError || res.Error.Kind != tool.KindUnavailable || res.Error.Message != want {
		t.Fatalf("call: %+v, want unavailable: %s", res.Error, want)
	}
	if got := listed(a); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Fatalf("listed %v", got)
	}
	loadErr := loadErrorOf(a, "alpha")
	if loadErr != nil {
		t.Fatalf("load error kept for a file that could not be read for now: %v", loadErr)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	w.put(t, "alpha", wasm)
	wantReply(t, a, "alpha", "a")
	wantReply(t, a, "beta", "b")
}

func TestIdleTTLReleasesAndComesBack(t *testing.T) {
	w := newLazyWorld(t, map[string][]byte{"alpha": watTool(t, "alpha", "a"), "beta": watTool(t, "beta", "b")})
	a, _ := w.start(t, "  defaults: {idle_ttl: 1m}\n", nil)
	wantReply(t, a, "alpha", "a")
	if n := a.Catalog().ReleaseIdle(time.Now()); n != 0 {
		t.Fatalf("released %d modules used just now", n)
	}
	if n := a.Catalog().ReleaseIdle(time.Now().Add(time.Minute)); n != 2 {
		t.Fatalf("released %d modules, want 2", n)
	}
	for _, m := range a.Catalog().Table().Modules() {
		if m.Loaded() || m.Live() != 0 {
			t.Fatalf("%s still loaded (%d instances)", m.Name(), m.Live())
		}
	}
	loads := a.Runtime().BodyLoads()
	wantReply(t, a, "alpha", "a")
	if a.Runtime().BodyLoads() != loads+1 {
		t.Fatal("the call after a release did not load the module again")
	}

	never, _ := w.start(t, "  defaults: {idle_ttl: 0s}\n", nil)
	wantReply(t, never, "alpha", "a")
	if n := never.Catalog().ReleaseIdle(time.Now().Add(24 * time.Hour)); n != 0 {
		t.Fatalf("idle_ttl 0 released %d modules", n)
	}
}

func TestPreloadCompilesInBackground(t *testing.T) {
	w := newLazyWorld(t, map[string][]byte{"alpha": watTool(t, "alpha", "a"), "beta": watTool(t, "beta", "b")})
	first, _ := w.start(t, "", nil)
	first.Close(context.Background())

	a, _ := startApp(t, w.dir, w.config("  defaults: {preload: true}\n"), nil)
	var progress []catalog.LoadProgress
	a.Catalog().SetLoadProgress(func(p catalog.LoadProgress) { progress = append(progress, p) })
	a.Catalog().LoadToolsInBackground(context.Background(), func(err error) { t.Error(err) })
	a.catalog.Wait()
	for _, m := range a.Catalog().Table().Modules() {
		if !m.Loaded() {
			t.Fatalf("%s not preloaded", m.Name())
		}
	}
	if n := a.Runtime().BodyLoads(); n != 2 {
		t.Fatalf("%d loads, want 2", n)
	}
	if len(progress) != 4 || progress[3].Finished != 2 || progress[3].Total != 2 || !progress[3].Done {
		t.Fatalf("progress %+v", progress)
	}
	wantReply(t, a, "beta", "b")
}

func TestIdleTTLConfig(t *testing.T) {
	w := newLazyWorld(t, nil)
	a, _ := startApp(t, w.dir, w.config(""), nil)
	if d := a.Config().Tools.Defaults; d.IdleTTL != 10*time.Minute || d.Preload {
		t.Fatalf("defaults: idle_ttl %s preload %v", d.IdleTTL, d.Preload)
	}
}

// TestColdStartProgress: a cold start reports each compile's start and end,
// and its n/m ends at m/m with m the modules compiled.
func TestColdStartProgress(t *testing.T) {
	w := newLazyWorld(t, map[string][]byte{"alpha": watTool(t, "alpha", "a"), "beta": watTool(t, "beta", "b"), "gamma": watTool(t, "gamma", "c")})
	a, _ := startApp(t, w.dir, w.config(""), nil)
	var progress []catalog.LoadProgress
	a.Catalog().SetLoadProgress(func(p catalog.LoadProgress) { progress = append(progress, p) })
	if errs := a.Catalog().LoadTools(context.Background()); len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(progress) != 6 {
		t.Fatalf("%d reports, want a start and an end for each of 3 modules: %+v", len(progress), progress)
	}
	for _, p := range progress {
		if p.Total > 3 || p.Finished > p.Total || p.Err != nil {
			t.Fatalf("report %+v", p)
		}
	}
	if last := progress[5]; !last.Done || last.Finished != 3 || last.Total != 3 {
		t.Fatalf("last report %+v, want 3/3", last)
	}
}

// loadErrorOf is the latest load failure the catalog keeps for module, nil
// when it keeps none.
func loadErrorOf(a *App, module string) error {
	for _, e := range a.catalog.LoadErrors() {
		if e.Module == module {
			return e.Err
		}
	}
	return nil
}
