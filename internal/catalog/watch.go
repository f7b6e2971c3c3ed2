package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/warden-run/warden/runtime"
)

// reloadSettle is how long a module file must stay quiet before it is
// reloaded: copying a large file produces a burst of write events.
const reloadSettle = 150 * time.Millisecond

// WatchTools hot-reloads the tools dir until ctx ends: a new or replaced
// .wasm file is loaded (a broken one leaves the previous version serving
// and logs why), a removed one is unloaded, and Options.Changed hears of
// every change to the tool set.
func (c *Catalog) WatchTools(ctx context.Context) error {
	dir := c.config().Tools.Dir
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch tools dir: %w", err)
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return fmt.Errorf("watch tools dir %s: %w", dir, err)
	}
	go func() {
		defer w.Close()
		c.watchLoop(ctx, dir, w.Events, w.Errors)
	}()
	return nil
}

// watchLoop applies the watcher's events until ctx ends or a channel
// closes. An event on the dir itself (its mode changed: it may have become
// readable again) and a watcher error (events may have been lost, e.g. a
// queue overflow) rescan the dir: a module added or changed while the dir
// was unreadable, or whose event was lost, is loaded without being touched.
func (c *Catalog) watchLoop(ctx context.Context, dir string, events <-chan fsnotify.Event, errs <-chan error) {
	pending := make(map[string]time.Time)
	// The ticker runs only while a change is pending: an idle server
	// does not wake up 20 times a second for nothing.
	tick := time.NewTicker(reloadSettle / 3)
	tick.Stop()
	defer tick.Stop()
	schedule := func(path string) {
		if len(pending) == 0 {
			tick.Reset(reloadSettle / 3)
		}
		pending[path] = time.Now()
	}
	rescan := func(why string) {
		paths := c.rescanPaths(dir)
		if len(paths) > 0 {
			c.log.Info("tools dir rescanned", "dir", dir, "reason", why, "modules", len(paths))
		}
		for _, path := range paths {
			schedule(path)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			switch {
			case strings.HasSuffix(ev.Name, ".wasm"):
				schedule(ev.Name)
			case filepath.Clean(ev.Name) == filepath.Clean(dir):
				rescan("the dir changed (" + ev.Op.String() + ")")
			}
		case err, ok := <-errs:
			if !ok {
				return
			}
			c.log.Warn("tools dir watch", "error", err)
			rescan("watch error")
		case now := <-tick.C:
			for path, last := range pending {
				if now.Sub(last) >= reloadSettle {
					delete(pending, path)
					c.Reload(ctx, path)
				}
			}
			if len(pending) == 0 {
				tick.Stop()
			}
		}
	}
}

// rescanPaths lists the module files of dir that are not in the table
// or whose last load failed, and the table's modules whose file is gone:
// what a lost or failed event may have left out of line.
func (c *Catalog) rescanPaths(dir string) []string {
	paths, err := runtime.ModuleFiles(dir)
	if err != nil {
		c.log.Warn("tools dir not rescanned", "dir", dir, "error", err)
		return nil
	}
	loaded := make(map[string]bool)
	for _, m := range c.table.Modules() {
		loaded[m.Name()] = true
	}
	c.mu.Lock()
	failed := make(map[string]bool, len(c.loadErrors))
	for path := range c.loadErrors {
		failed[path] = true
	}
	c.mu.Unlock()
	var out []string
	present := make(map[string]bool)
	for _, path := range paths {
		present[ModuleName(path)] = true
		if !loaded[ModuleName(path)] || failed[path] {
			out = append(out, path)
		}
	}
	for name := range loaded {
		if !present[name] {
			out = append(out, filepath.Join(dir, name+".wasm"))
		}
	}
	return out
}

// Reload brings the table in line with the file at path, as WatchTools does
// when the file changes: a file gone is unloaded, any other is (re)loaded.
func (c *Catalog) Reload(ctx context.Context, path string) {
	// First the tools dir's own files: a module file that is now a symlink
	// makes its target warden's own before the module can serve.
	if before := c.opts.BeforeReload; before != nil {
		if err := before(); err != nil {
			c.log.Error("warden's own files not refreshed after a tools dir change", "error", err)
		}
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		c.mu.Lock()
		delete(c.loadErrors, path)
		c.mu.Unlock()
		if m := c.table.Remove(ModuleName(path)); m != nil {
			m.Close(ctx)
			c.log.Info("module removed", "file", path)
			c.logRefusals("")
			c.changed()
		}
		return
	}
	loaded, errs := c.LoadFile(ctx, path)
	for _, err := range errs {
		c.log.Error("module not (fully) loaded; a previous version keeps serving", "file", filepath.Base(path), "error", err)
	}
	if loaded {
		c.log.Info("module loaded", "file", path)
		c.logRefusals(ModuleName(path))
		c.changed()
	}
}
