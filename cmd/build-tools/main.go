// Command build-tools builds warden's bundled tools: every folder of
// tools-wasm/ becomes <out>/<name>.wasm, built as a wasip1 reactor with the
// local Go toolchain. Run it from the repository root:
//
//	go run ./cmd/build-tools -o bin/tools [name ...]
//
// Each tool is built in its folder, so a tool with its own go.mod (jq, whose
// gojq the server does not need) builds in its own module. Builds run in
// parallel (up to GOMAXPROCS) and an output newer than every file its
// package depends on (outside the standard library and the module cache) is
// left alone; -f rebuilds regardless.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	out := flag.String("o", "bin/tools", "output directory")
	src := flag.String("src", "tools-wasm", "directory holding one folder per tool")
	force := flag.Bool("f", false, "rebuild even if the output is up to date")
	jobs := flag.Int("j", runtime.GOMAXPROCS(0), "builds to run at once")
	skip := flag.String("skip", "conformance,longrun", "comma-separated folders that are test fixtures, not bundled tools, built only when named")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./cmd/build-tools [-o dir] [-f] [-j n] [tool ...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	b := &builder{src: *src, out: *out, force: *force, log: os.Stderr, skip: strings.Split(*skip, ",")}
	if err := b.run(flag.Args(), max(*jobs, 1)); err != nil {
		fmt.Fprintf(os.Stderr, "build-tools: %v\n", err)
		os.Exit(1)
	}
}

// retired maps outputs that bundled tools were once built as to the module
// that now holds them. A stale one left in the output directory would
// describe the same tool names as its successor, unpinned, and the registry
// would then refuse both; so building the successor removes it.
var retired = map[string]string{
	"definition":        "lsp",
	"hover":             "lsp",
	"references":        "lsp",
	"symbols":           "lsp",
	"workspace_symbols": "lsp",
}

type builder struct {
	src, out string
	force    bool
	skip     []string // fixture folders, built only when named
	log      io.Writer
	mu       sync.Mutex // serializes log lines
}

func (b *builder) logf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(b.log, "build-tools: "+format+"\n", args...)
}

// run builds the named tools (all of them when names is empty).
func (b *builder) run(names []string, jobs int) error {
	all, err := b.tools()
	if err != nil {
		return err
	}
	if len(names) == 0 {
		for _, n := range all {
			if !slices.Contains(b.skip, n) {
				names = append(names, n)
			}
		}
	}
	for _, n := range names {
		if !slices.Contains(all, n) {
			return fmt.Errorf("no tool %q in %s (have %s)", n, b.src, strings.Join(all, ", "))
		}
	}
	if err := os.MkdirAll(b.out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", b.out, err)
	}
	b.logf("%d tools from %s to %s, %d at a time", len(names), b.src, b.out, jobs)
	sem := make(chan struct{}, jobs)
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = b.build(name)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// tools lists the folders of src that hold Go files.
func (b *builder) tools() ([]string, error) {
	entries, err := os.ReadDir(b.src)
	if err != nil {
		return nil, fmt.Errorf("list tools: %w", err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if gos, _ := filepath.Glob(filepath.Join(b.src, e.Name(), "*.go")); len(gos) > 0 {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no tools in %s", b.src)
	}
	return names, nil
}

func goEnv() []string {
	env := []string{"GOOS=wasip1", "GOARCH=wasm", "GOTOOLCHAIN=local", "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false"}
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "GOOS", "GOARCH", "GOTOOLCHAIN", "CGO_ENABLED", "GOFLAGS":
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (b *builder) build(name string) error {
	dir := filepath.Join(b.src, name)
	dest := filepath.Join(b.out, name+".wasm")
	if !b.force {
		fresh, err := upToDate(dir, dest)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if fresh {
			b.logf("%-10s up to date", name)
			return b.retire(name)
		}
	}
	b.logf("%-10s building", name)
	start := time.Now()
	// Absolute, since go build runs in the tool's folder.
	tmp, err := filepath.Abs(dest + ".tmp")
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", tmp, ".")
	cmd.Dir = dir
	cmd.Env = goEnv()
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: go build: %v\n%s", name, err, output.Bytes())
	}
	if err := os.Rename(tmp, dest); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	info, _ := os.Stat(dest)
	b.logf("%-10s built %s (%.1f MB) in %s", name, dest, float64(info.Size())/1e6, time.Since(start).Round(10*time.Millisecond))
	return b.retire(name)
}

// retire removes from the output directory the retired outputs that module
// name replaces (see retired), saying so.
func (b *builder) retire(name string) error {
	for _, old := range slices.Sorted(maps.Keys(retired)) {
		if retired[old] != name {
			continue
		}
		stale := filepath.Join(b.out, old+".wasm")
		switch err := os.Remove(stale); {
		case err == nil:
			b.logf("%-10s removed %s: its tools are in %s.wasm now", name, stale, name)
		case !errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("%s: remove the retired %s: %w", name, stale, err)
		}
	}
	return nil
}

// upToDate reports whether dest is newer than every file of every package
// the package in dir imports outside the standard library and the module
// cache (whose directories are immutable per version: warden's own packages,
// replaced by a local path in a tool's own module, are not), and than
// go.mod and go.sum, the repository's and the tool's own.
func upToDate(dir, dest string) (bool, error) {
	info, err := os.Stat(dest)
	if err != nil {
		return false, nil
	}
	built := info.ModTime()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{if not .Module}}{{.Dir}}{{else if .Module.Main}}{{.Dir}}{{else if .Module.Replace}}{{if not .Module.Replace.Version}}{{.Dir}}{{end}}{{end}}{{end}}", ".")
	cmd.Dir = dir
	cmd.Env = goEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return false, fmt.Errorf("go list: %v\n%s", err, stderr.Bytes())
	}
	files := []string{"go.mod", "go.sum", filepath.Join(dir, "go.mod"), filepath.Join(dir, "go.sum")}
	for _, pkgDir := range strings.Fields(string(out)) {
		entries, err := os.ReadDir(pkgDir)
		if err != nil {
			return false, err
		}
		for _, e := range entries {
			if e.Type().IsRegular() && !strings.HasSuffix(e.Name(), "_test.go") {
				files = append(files, filepath.Join(pkgDir, e.Name()))
			}
		}
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return false, err
		}
		if fi.ModTime().After(built) {
			return false, nil
		}
	}
	return true, nil
}
