package app

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitListed waits for a tool-set change after which a lists name, or fails
// when ctx ends first.
func waitListed(t *testing.T, ctx context.Context, a *App, changed <-chan struct{}, name string) {
	t.Helper()
	for !slices.Contains(listed(a), name) {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("%s never loaded; listed %v", name, listed(a))
		}
	}
}

func subscribe(t *testing.T, a *App) <-chan struct{} {
	changed := make(chan struct{}, 64)
	cancel := a.Subscribe(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	t.Cleanup(cancel)
	return changed
}

// TestToolsDirRescanOnChmod: a module the watcher missed (added while the
// dir was unreadable, its event lost or its load failed) is loaded when
// the dir's mode changes back, without the module being touched.
func TestToolsDirRescanOnChmod(t *testing.T) {
	w := newLazyWorld(t, map[string][]byte{"alpha": watTool(t, "alpha", "a")})
	a, errs := w.start(t, "", nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	// Added before the watcher runs: no event of its own is ever seen.
	w.put(t, "beta", watTool(t, "beta", "b"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	changed := subscribe(t, a)
	if err := a.Catalog().WatchTools(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(w.tools, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(w.tools, 0o755); err != nil {
		t.Fatal(err)
	}
	waitListed(t, ctx, a, changed, "beta")
	wantReply(t, a, "beta", "b")
}

// TestZeroToolsLoadedSaysSo: a start whose every module fails logs one
// error-level summary line, and LoadErrors (what /healthz lists) names each
// module with its error.
func TestZeroToolsLoadedSaysSo(t *testing.T) {
	w := newLazyWorld(t, nil)
	w.put(t, "broken", []byte("not wasm"))
	w.put(t, "worse", []byte("\x00asm"))
	var logs syncBuffer
	a, _ := startApp(t, w.dir, w.config(""), &logs)
	var mu sync.Mutex
	var reported []error
	a.Catalog().LoadToolsInBackground(context.Background(), func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() })
	a.catalog.Wait()
	if len(reported) != 2 {
		t.Fatalf("reported %v", reported)
	}
	if !strings.Contains(logs.String(), `level=ERROR msg="no tools served: 2 of 2 modules failed to load (errors above; /healthz lists them)"`) ||
		!strings.Contains(logs.String(), "failed=\"[broken worse]\"") {
		t.Fatalf("no summary line:\n%s", logs.String())
	}
	errs := a.loadErrors()
	if len(errs) != 2 || errs[0].Module != "broken" || errs[1].Module != "worse" ||
		!strings.HasPrefix(errs[0].Error, "load "+filepath.Join(w.tools, "broken.wasm")+": ") {
		t.Fatalf("LoadErrors %+v", errs)
	}
}
