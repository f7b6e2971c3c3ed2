package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// reloadSettle is how long a module file must stay quiet before it is
// reloaded: copying a large file produces a burst of write events.
const reloadSettle = 150 * time.Millisecond

// WatchTools hot-reloads the tools dir until ctx ends: a new or replaced
// .wasm file is loaded (a broken one leaves the previous version serving
// and logs why), a removed one is unloaded, and subscribers hear of every
// change to the tool set.
func (a *App) WatchTools(ctx context.Context) error {
	dir := a.Config().Tools.Dir
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
		pending := make(map[string]time.Time)
		// The ticker runs only while a change is pending: an idle server
		// does not wake up 20 times a second for nothing.
		tick := time.NewTicker(reloadSettle / 3)
		tick.Stop()
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if strings.HasSuffix(ev.Name, ".wasm") {
					if len(pending) == 0 {
						tick.Reset(reloadSettle / 3)
					}
					pending[ev.Name] = time.Now()
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				a.log.Warn("tools dir watch", "error", err)
			case now := <-tick.C:
				for path, last := range pending {
					if now.Sub(last) >= reloadSettle {
						delete(pending, path)
						a.reload(ctx, path)
					}
				}
				if len(pending) == 0 {
					tick.Stop()
				}
			}
		}
	}()
	return nil
}

// reload brings the registry in line with the file at path.
func (a *App) reload(ctx context.Context, path string) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		a.mu.Lock()
		delete(a.loadErrors, path)
		a.mu.Unlock()
		if m := a.registry.Remove(ModuleName(path)); m != nil {
			m.Close(ctx)
			a.log.Info("module removed", "file", path)
			a.logRefusals("")
			a.notify()
		}
		return
	}
	loaded, errs := a.loadModule(ctx, path)
	for _, err := range errs {
		a.log.Error("module not (fully) loaded; a previous version keeps serving", "file", filepath.Base(path), "error", err)
	}
	if loaded {
		a.log.Info("module loaded", "file", path)
		a.logRefusals(ModuleName(path))
		a.notify()
	}
}

// logRefusals logs the tools refused for name collisions that involve
// module (every refusal when module is ""), loudly: a tool someone
// expects has stopped being served, or a module's tool never was.
func (a *App) logRefusals(module string) {
	for _, r := range a.registry.Refused() {
		if module == "" || slices.Contains(r.Modules, module) {
			a.log.Error("tool refused", "tool", r.Tool, "module", r.Module, "modules", r.Modules, "reason", r.Reason)
		}
	}
}
