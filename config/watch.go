package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// ErrBecameBlank refuses a config file that became empty while warden runs.
var ErrBecameBlank = errors.New("the file became empty (nothing but whitespace or comments), which would drop every grant and reset every limit to its default; refused as a truncated save. To clear the config on purpose, write {} into the file (or set the keys explicitly)")

// Live holds the config in force. Readers take Current on every call, so a
// change applies from the next call on; a file that fails to load or
// validate is reported and the previous config stays in force.
type Live struct {
	current atomic.Pointer[Config]
	// start is the config warden started with: what the keys read only at
	// start (server.*) still say in the running server.
	start *Config
	// refused is why the file's content is not in force (the last
	// reload's error), nil once a reload applies it.
	refused atomic.Pointer[string]
	log     *slog.Logger
	changed func(*Config)
}

// NewLive returns a Live starting from c. changed, if not nil, is called
// after every successful reload.
func NewLive(c *Config, logger *slog.Logger, changed func(*Config)) *Live {
	l := &Live{log: logger, changed: changed, start: c}
	l.current.Store(c)
	return l
}

// Current returns the config in force.
func (l *Live) Current() *Config { return l.current.Load() }

// Refused is why the config file as last read is not in force: the last
// reload's error, one problem a line, as at start (config.yaml:3: …); ""
// when the last reload applied it, or none was refused. /healthz shows it.
func (l *Live) Refused() string {
	if p := l.refused.Load(); p != nil {
		return *p
	}
	return ""
}

// Reload reads the file again; on error the previous config stays.
//
// A file that became blank (empty, or only whitespace and comments) while
// the previous one was not is refused with ErrBecameBlank: an editor's
// truncating save, or a half-written file, looks exactly like that, and
// applying it would drop every grant and reset every limit to its default
// at once. Writing `{}` clears the config deliberately.
func (l *Live) Reload() error {
	err := l.reload()
	if err != nil {
		msg := err.Error()
		l.refused.Store(&msg)
	} else {
		l.refused.Store(nil)
	}
	return err
}

func (l *Live) reload() error {
	prev := l.current.Load()
	next, err := load(prev.File, prev.shownFile())
	if err != nil {
		return err
	}
	if next.Blank && !prev.Blank && !sameSettings(prev, next) {
		return fmt.Errorf("config %s: %w", prev.File, ErrBecameBlank)
	}
	if err := checkAccessReload(l.start, next); err != nil {
		return fmt.Errorf("config %s: %w", prev.File, err)
	}
	l.current.Store(next)
	WarnDeprecated(l.log, next, prev)
	if keys := StartOnlyChanges(prev, next); len(keys) > 0 {
		l.log.Warn("config change not applied until warden serve restarts: these keys are read at start", "file", next.File, "keys", keys)
	}
	if l.changed != nil {
		l.changed(next)
	}
	return nil
}

// StartOnlyChanges lists the keys that differ between a and b and that a
// running server reads only at start: tools.dir, tools.tiering, tools.cache_max and every server.* key but
// server.rate_limit (which applies from the next call). A reload applies
// everything else, so these are what an operator must be told about.
func StartOnlyChanges(a, b *Config) []string {
	var keys []string
	if a.Tools.Dir != b.Tools.Dir {
		keys = append(keys, "tools.dir")
	}
	if a.Tools.Tiering != b.Tools.Tiering {
		keys = append(keys, "tools.tiering")
	}
	if a.Tools.CacheMax != b.Tools.CacheMax {
		keys = append(keys, "tools.cache_max")
	}
	x, y := reflect.ValueOf(a.Server), reflect.ValueOf(b.Server)
	for i := range x.NumField() {
		name := x.Type().Field(i).Tag.Get("mapstructure")
		if name == "rate_limit" || reflect.DeepEqual(x.Field(i).Interface(), y.Field(i).Interface()) {
			continue
		}
		keys = append(keys, "server."+name)
	}
	return keys
}

// sameSettings reports whether a and b configure the same, whatever file
// they came from.
func sameSettings(a, b *Config) bool {
	x, y := *a, *b
	x.File, x.Dir, x.Blank, x.src, x.shown = "", "", false, nil, ""
	y.File, y.Dir, y.Blank, y.src, y.shown = "", "", false, nil, ""
	return reflect.DeepEqual(x, y)
}

// Watch reloads the config whenever its file changes, until ctx ends. It
// watches the directory, not the file, because editors save by renaming a
// new file over the old one.
func (l *Live) Watch(ctx context.Context) error {
	file := l.current.Load().File
	if file == "" {
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch config: %w", err)
	}
	if err := w.Add(filepath.Dir(file)); err != nil {
		w.Close()
		return fmt.Errorf("watch config %s: %w", file, err)
	}
	go func() {
		defer w.Close()
		// Editors write in bursts; settle before reading.
		var settle <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Clean(ev.Name) == file && ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename) != 0 {
					settle = time.After(50 * time.Millisecond)
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				l.log.Warn("config watch", "error", err)
			case <-settle:
				settle = nil
				if err := l.Reload(); err != nil {
					l.log.Error("config change refused; the previous config stays in force", "error", err)
				} else {
					l.log.Info("config reloaded", "file", file)
				}
			}
		}
	}()
	return nil
}
