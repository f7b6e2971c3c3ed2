package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/policy"
	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
)

// world is a tools dir, a config naming it, and catalogs started on it.
type world struct {
	dir, tools string
}

func newWorld(t *testing.T) *world {
	w := &world{dir: t.TempDir()}
	w.tools = filepath.Join(w.dir, "tools")
	if err := os.MkdirAll(w.tools, 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// put writes wasm as the module file name.wasm.
func (w *world) put(t *testing.T, name string, wasm []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(w.tools, name+".wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
}

// catalog starts a catalog on w with no compilation cache; changed hears
// of every change of its list.
func (w *world) catalog(t *testing.T) (c *Catalog, changed <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{}, 64)
	c = w.newCatalog(t, "", func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	return c, ch
}

// newCatalog starts a catalog on w whose config's tools section adds
// toolsYAML (indented two spaces), with no compilation cache; changed, if
// not nil, hears of every change of its list.
func (w *world) newCatalog(t *testing.T, toolsYAML string, changed func()) *Catalog {
	t.Helper()
	path := filepath.Join(w.dir, "config.yaml")
	body := fmt.Sprintf("project: {root: %q}\ntools:\n  dir: tools\n  cache_dir: off\n%s", w.dir, toolsYAML)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	rt, err := runtime.New(context.Background(), runtime.Options{CacheDir: cfg.Tools.CacheDir, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	pol := policy.New(cfg)
	c := New(Options{Runtime: rt, Policy: func() *policy.Policy { return pol }, Logger: log, Changed: changed})
	t.Cleanup(func() {
		c.Close(context.Background())
		rt.Close(context.Background())
	})
	return c
}

func listed(c *Catalog) []string {
	var names []string
	for _, d := range c.List() {
		names = append(names, d.Name)
	}
	return names
}

// waitListed waits for a change of c's list after which it lists name, or
// fails when ctx ends first.
func waitListed(t *testing.T, ctx context.Context, c *Catalog, changed <-chan struct{}, name string) {
	t.Helper()
	for !slices.Contains(listed(c), name) {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("%s never loaded; listed %v", name, listed(c))
		}
	}
}

// wantReply calls the tool served as name and wants reply.
func wantReply(t *testing.T, c *Catalog, name, reply string) {
	t.Helper()
	tl, ok := c.Table().Tool(name)
	if !ok {
		t.Fatalf("%s is not served", name)
	}
	res := tl.Call(context.Background(), runtime.CallRequest{})
	if res.IsError || len(res.Content) != 1 || res.Content[0].Text != reply {
		t.Fatalf("%s answered %+v, want %q", name, res, reply)
	}
}

// TestToolsDirRescanOnWatchError: a watcher error (events may be lost)
// rescans the dir: a module whose load failed is loaded again, one added
// unseen is loaded, and one removed unseen is unloaded.
func TestToolsDirRescanOnWatchError(t *testing.T) {
	w := newWorld(t)
	w.put(t, "alpha", testwasm.ReplyingWAT(t, "a", "alpha"))
	w.put(t, "gone", testwasm.ReplyingWAT(t, "g", "gone"))
	w.put(t, "broken", []byte("not wasm"))
	c, changed := w.catalog(t)
	if errs := c.LoadTools(context.Background()); len(errs) != 1 {
		t.Fatalf("load errors %v, want broken's", errs)
	}
	w.put(t, "broken", testwasm.ReplyingWAT(t, "fixed", "broken"))
	w.put(t, "beta", testwasm.ReplyingWAT(t, "b", "beta"))
	if err := os.Remove(w.tools + "/gone.wasm"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events, werrs := make(chan fsnotify.Event), make(chan error, 1)
	done := make(chan struct{})
	go func() { defer close(done); c.watchLoop(ctx, w.tools, events, werrs) }()
	werrs <- fsnotify.ErrEventOverflow
	waitListed(t, ctx, c, changed, "beta")
	waitListed(t, ctx, c, changed, "broken")
	for slices.Contains(listed(c), "gone") {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("gone still listed: %v", listed(c))
		}
	}
	wantReply(t, c, "broken", "fixed")
	cancel()
	<-done
}

// TestLoadErrorsInFileOrder: LoadTools reports the errors of files in the
// order of the files' names, each file's in the order its module describes
// them, then the collisions, the same at every load whatever order the
// files finished in. The names are chosen so that the errors' texts sort
// otherwise: a.wasm.wasm's errors ("load …/a.wasm.wasm: …") sort before
// a.wasm's, and the rejection of "zz/bad" before that of "aa/bad".
func TestLoadErrorsInFileOrder(t *testing.T) {
	w := newWorld(t)
	w.put(t, "a", []byte("not wasm"))
	w.put(t, "a.wasm", testwasm.DescribingWAT(t, "zz/bad", "a_ok", "aa/bad"))
	w.put(t, "b", []byte("\x00asm"))
	w.put(t, "c", testwasm.DescribingWAT(t, "same"))
	w.put(t, "d", testwasm.DescribingWAT(t, "same"))
	w.put(t, "e", testwasm.DescribingWAT(t, "c/bad", "b/bad", "e_ok"))
	file := func(name string) string { return "load " + filepath.Join(w.tools, name) + ": " }
	want := []string{
		file("a.wasm"),
		file("a.wasm.wasm") + `tool "zz/bad"`,
		file("a.wasm.wasm") + `tool "aa/bad"`,
		file("b.wasm"),
		file("e.wasm") + `tool "c/bad"`,
		file("e.wasm") + `tool "b/bad"`,
		`tool "same" of module c is refused`,
		`tool "same" of module d is refused`,
	}
	var first []string
	for i := range 5 {
		c, _ := w.catalog(t)
		errs := c.LoadTools(context.Background())
		var got []string
		for _, err := range errs {
			got = append(got, err.Error())
		}
		if len(got) != len(want) {
			t.Fatalf("load %d: %d errors, want %d:\n%s", i, len(got), len(want), strings.Join(got, "\n"))
		}
		for j, w := range want {
			if !strings.HasPrefix(got[j], w) {
				t.Fatalf("load %d: error %d is %q, want it to begin %q; all:\n%s", i, j, got[j], w, strings.Join(got, "\n"))
			}
		}
		if first == nil {
			first = got
		} else if !slices.Equal(got, first) {
			t.Fatalf("load %d gave\n%s\nload 0 gave\n%s", i, strings.Join(got, "\n"), strings.Join(first, "\n"))
		}
	}
}

// TestInFileOrder: whatever order the errors came in, they leave sorted by
// file, each file's in the order they came.
func TestInFileOrder(t *testing.T) {
	e := func(path, msg string) fileError { return fileError{path, fmt.Errorf("%s", msg)} }
	in := []fileError{e("/t/b.wasm", "b1"), e("/t/a.wasm.wasm", "x2"), e("/t/a.wasm", "a"), e("/t/a.wasm.wasm", "x1"), e("/t/b.wasm", "b0")}
	var got []string
	for _, err := range inFileOrder(in) {
		got = append(got, err.Error())
	}
	if want := []string{"a", "x2", "x1", "b1", "b0"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
