package scaffold

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Dev is warden dev's loop: build the project in Dir with make whenever a
// source changes, report the result, and show what the built modules
// offer. A failed build is reported and the loop goes on.
type Dev struct {
	// Dir is the project folder, where make runs.
	Dir string
	// Out receives the reports.
	Out io.Writer
	// Make is the build command (default: make).
	Make []string
	// Describe reports the tools of the module at path (warden inspect's
	// loading); an error is printed, as for a failed build.
	Describe func(ctx context.Context, path string) (string, error)
	// Debounce is how long changes must stop before a build starts: an
	// editor's save is often several events (write, chmod, rename).
	Debounce time.Duration
	// Built, when set, hears of every build once it is reported (tests).
	Built func(ok bool)
}

// DefaultDebounce waits out a save's burst of events.
const DefaultDebounce = 200 * time.Millisecond

// Run builds once, then again after every burst of changes sent on
// changes, until ctx ends or changes is closed.
func (d *Dev) Run(ctx context.Context, changes <-chan string) error {
	d.build(ctx)
	timer := time.NewTimer(0)
	if !timer.Stop() {
		<-timer.C
	}
	pending := false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case _, ok := <-changes:
			if !ok {
				return nil
			}
			if pending && !timer.Stop() {
				<-timer.C
			}
			pending = true
			timer.Reset(d.Debounce)
		case <-timer.C:
			pending = false
			d.build(ctx)
		}
	}
}

func (d *Dev) build(ctx context.Context) {
	makeCmd := d.Make
	if len(makeCmd) == 0 {
		makeCmd = []string{"make"}
	}
	fmt.Fprintf(d.Out, "warden dev: %s in %s\n", strings.Join(makeCmd, " "), d.Dir)
	cmd := exec.CommandContext(ctx, makeCmd[0], makeCmd[1:]...)
	cmd.Dir = d.Dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	d.Out.Write(out.Bytes())
	if err != nil {
		fmt.Fprintf(d.Out, "warden dev: build failed: %v (waiting for the next save)\n", err)
		d.done(false)
		return
	}
	fmt.Fprintln(d.Out, "warden dev: build ok")
	ok := true
	// A project of warden new builds into build/ (its tools dir); a
	// Makefile of one's own may build beside the sources.
	wasm, _ := filepath.Glob(filepath.Join(d.Dir, "*.wasm"))
	inBuild, _ := filepath.Glob(filepath.Join(d.Dir, "build", "*.wasm"))
	wasm = append(wasm, inBuild...)
	if len(wasm) == 0 {
		fmt.Fprintf(d.Out, "warden dev: the build left no .wasm file in %s or its build/\n", d.Dir)
		ok = false
	}
	for _, path := range wasm {
		if d.Describe == nil {
			continue
		}
		s, err := d.Describe(ctx, path)
		if err != nil {
			fmt.Fprintf(d.Out, "warden dev: %s: %v\n", filepath.Base(path), err)
			ok = false
			continue
		}
		io.WriteString(d.Out, s)
	}
	d.done(ok)
}

func (d *Dev) done(ok bool) {
	if d.Built != nil {
		d.Built(ok)
	}
}

// skipDirs hold no sources of the project: dependencies and build output.
var skipDirs = map[string]bool{"vendor": true, "node_modules": true, "build": true, "warden-sdk": true}

// isSource says whether a change to the file named name should rebuild:
// not the build's own products (.wasm, objects, the build/ folder), not
// editors' temporary and backup files, not hidden files.
func isSource(name string) bool {
	base := filepath.Base(name)
	switch {
	case skipDirs[base], // the build creating build/, npm its node_modules/
		strings.HasPrefix(base, "."), strings.HasPrefix(base, "#"), strings.HasSuffix(base, "~"),
		strings.HasSuffix(base, ".swp"), strings.HasSuffix(base, ".swx"), strings.HasSuffix(base, ".tmp"):
		return false
	}
	switch filepath.Ext(base) {
	case ".wasm", ".o", ".a":
		return false
	}
	return true
}

// Watch sends the name of every changed source file under dir (its
// subfolders too, but for dependencies and hidden ones) on the returned
// channel until ctx ends. The watcher's own errors go to onError.
func Watch(ctx context.Context, dir string, onError func(error)) (<-chan string, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	err = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			return nil
		}
		if p != dir && (skipDirs[e.Name()] || strings.HasPrefix(e.Name(), ".")) {
			return filepath.SkipDir
		}
		return w.Add(p)
	})
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	changes := make(chan string)
	go func() {
		defer close(changes)
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if !isSource(ev.Name) {
					continue
				}
				// A new subfolder's files are sources too.
				if ev.Has(fsnotify.Create) {
					if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() && !skipDirs[fi.Name()] {
						w.Add(ev.Name)
					}
				}
				select {
				case changes <- ev.Name:
				case <-ctx.Done():
					return
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				onError(err)
			}
		}
	}()
	return changes, nil
}
