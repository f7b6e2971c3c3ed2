package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// WardenModule is warden's module path, and WardenVersion the version a
// scaffolded go.mod requires it at. The vendored copy is what builds, so the
// version only has to be a valid pseudo-version; a fixed one keeps the
// archive the same from one commit to the next (the freshness test compares
// it byte for byte).
const (
	WardenModule  = "github.com/warden-run/warden"
	WardenVersion = "v0.0.0-00010101000000-000000000000"
)

// SDKGoVersion is the go directive the vendored warden module records, and so
// the least a scaffolded go.mod can say: the oldest Go whose language and
// standard library the SDK's import closure uses (//go:wasmexport and
// strings.SplitSeq are Go 1.24). warden's own go.mod names the patch release
// warden is built with, which a tool does not need: recording it would make
// every older 1.x toolchain refuse the project offline.
// TestSDKBuildsAtItsGoVersion vets the closure at this version.
const SDKGoVersion = "1.24"

// GoSDKPackage is the package a Go tool imports.
const GoSDKPackage = WardenModule + "/guest-sdk/go/warden"

type listedPackage struct {
	ImportPath string
	Dir        string
	Standard   bool
	Module     *struct {
		Path      string
		Version   string
		Dir       string
		GoVersion string
	}
}

// Collect gathers the SDK files from the warden checkout at root: the Go
// SDK's import closure (warden's own packages from root, the third-party ones
// from the module cache with their licenses) as go/vendor/... with
// go/vendor/modules.txt, the C SDK as c/..., the AssemblyScript package as
// assemblyscript/.... The C and AssemblyScript parts are optional.
func Collect(root string) ([]File, error) {
	goFiles, err := collectGo(root)
	if err != nil {
		return nil, err
	}
	files := goFiles
	for _, name := range []string{"warden.h", "warden.c"} {
		data, err := os.ReadFile(filepath.Join(root, "guest-sdk", "c", name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		files = append(files, File{Path: "c/" + name, Data: data})
	}
	as, err := collectAssemblyScript(filepath.Join(root, "guest-sdk", "assemblyscript"))
	if err != nil {
		return nil, err
	}
	return append(files, as...), nil
}

func collectGo(root string) ([]File, error) {
	cmd := exec.Command("go", "list", "-deps", "-json", "./guest-sdk/go/warden")
	cmd.Dir = root
	// The closure of the wasm build, which is what a tool compiles.
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps ./guest-sdk/go/warden in %s: %v: %s", root, err, stderr.Bytes())
	}
	type module struct {
		path, version, dir, goVersion string
		packages                      []string
	}
	modules := map[string]*module{}
	var files []File
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		if p.Standard {
			continue
		}
		if p.Module == nil {
			return nil, fmt.Errorf("package %s has no module", p.ImportPath)
		}
		m := modules[p.Module.Path]
		if m == nil {
			m = &module{path: p.Module.Path, version: p.Module.Version, dir: p.Module.Dir, goVersion: p.Module.GoVersion}
			if m.path == WardenModule {
				m.version, m.goVersion = WardenVersion, SDKGoVersion
			}
			modules[m.path] = m
		}
		m.packages = append(m.packages, p.ImportPath)
		entries, err := os.ReadDir(p.Dir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			// Every non-test .go file, whatever its build constraints, as
			// go mod vendor does: the tool's build picks among them.
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			data, err := os.ReadFile(filepath.Join(p.Dir, e.Name()))
			if err != nil {
				return nil, err
			}
			files = append(files, File{Path: "go/vendor/" + p.ImportPath + "/" + e.Name(), Data: data})
		}
	}
	paths := make([]string, 0, len(modules))
	for p := range modules {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var txt strings.Builder
	for _, p := range paths {
		m := modules[p]
		fmt.Fprintf(&txt, "# %s %s\n## explicit", m.path, m.version)
		if m.goVersion != "" {
			fmt.Fprintf(&txt, "; go %s", m.goVersion)
		}
		txt.WriteString("\n")
		sort.Strings(m.packages)
		for _, pkg := range m.packages {
			txt.WriteString(pkg + "\n")
		}
		if m.path == WardenModule {
			continue
		}
		entries, err := os.ReadDir(m.dir)
		if err != nil {
			return nil, err
		}
		found := false
		for _, e := range entries {
			if !e.IsDir() && (strings.HasPrefix(e.Name(), "LICENSE") || strings.HasPrefix(e.Name(), "COPYING")) {
				data, err := os.ReadFile(filepath.Join(m.dir, e.Name()))
				if err != nil {
					return nil, err
				}
				files = append(files, File{Path: "go/vendor/" + m.path + "/" + e.Name(), Data: data})
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("module %s@%s (%s) has no LICENSE file to ship with it", m.path, m.version, m.dir)
		}
	}
	files = append(files, File{Path: "go/vendor/modules.txt", Data: []byte(txt.String())})
	return files, nil
}

// collectAssemblyScript takes the package's manifest files and its
// assembly/**/*.ts sources; never node_modules or examples.
func collectAssemblyScript(dir string) ([]File, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var files []File
	for _, name := range []string{"package.json", "asconfig.json", "README.md"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		files = append(files, File{Path: "assemblyscript/" + name, Data: data})
	}
	assembly := filepath.Join(dir, "assembly")
	err := filepath.WalkDir(assembly, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == assembly {
			return filepath.SkipDir
		}
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "examples") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".ts") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files = append(files, File{Path: path.Join("assemblyscript", filepath.ToSlash(rel)), Data: data})
		return nil
	})
	return files, err
}
