package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/catalog"
	"github.com/warden-run/warden/internal/termsafe"
)

// showLoads shows a cold start on stderr when it is a terminal: one line
// per module compiled (n/m, name, time taken) under a status line naming
// the modules compiling and for how long. stdout is left to the protocol.
// When stderr is not a terminal it does nothing, and the app logs one line
// per module instead. stop clears the status line.
func showLoads(a *app.App) (stop func()) {
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		return func() {}
	}
	return watchLoads(a, os.Stderr, 250*time.Millisecond)
}

// loadView draws a cold start's progress on a terminal.
type loadView struct {
	w       io.Writer
	mu      sync.Mutex
	running map[string]time.Time // module → compile start
	last    catalog.LoadProgress
	drawn   bool // the status line is on screen
}

func watchLoads(a *app.App, w io.Writer, every time.Duration) (stop func()) {
	v := &loadView{w: w, running: make(map[string]time.Time)}
	a.Catalog().SetLoadProgress(v.report)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				v.mu.Lock()
				if len(v.running) > 0 {
					v.draw()
				}
				v.mu.Unlock()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		v.mu.Lock()
		defer v.mu.Unlock()
		v.clear()
	}
}

func (v *loadView) report(p catalog.LoadProgress) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.last = p
	name := termsafe.Line(p.Module)
	if !p.Done {
		v.running[p.Module] = time.Now()
		v.draw()
		return
	}
	delete(v.running, p.Module)
	v.clear()
	if p.Err != nil {
		fmt.Fprintf(v.w, "warden: [%d/%d] %s failed after %s\n", p.Finished, p.Total, name, p.Elapsed.Round(100*time.Millisecond))
	} else {
		fmt.Fprintf(v.w, "warden: [%d/%d] compiled %s in %s\n", p.Finished, p.Total, name, p.Elapsed.Round(100*time.Millisecond))
	}
	if len(v.running) > 0 {
		v.draw()
	}
}

// draw rewrites the status line. Callers hold mu.
func (v *loadView) draw() {
	names := make([]string, 0, len(v.running))
	for name := range v.running {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %s", termsafe.Line(name), time.Since(v.running[name]).Round(100*time.Millisecond))
	}
	fmt.Fprintf(v.w, "\r\x1b[Kwarden: compiling %d/%d: %s", v.last.Finished, v.last.Total, strings.Join(parts, ", "))
	v.drawn = true
}

// clear erases the status line. Callers hold mu.
func (v *loadView) clear() {
	if v.drawn {
		fmt.Fprint(v.w, "\r\x1b[K")
		v.drawn = false
	}
}
