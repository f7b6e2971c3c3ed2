// Package scaffold writes a new tool project: warden new NAME --lang L.
//
// templates/<lang>/ holds the project's files; every __NAME__ in a file's
// name or contents becomes the tool's name. Besides the template, New writes
// config.yaml (the build/ folder the Makefile writes as tools dir, the tool
// granted nothing)
// and the language's SDK from sdk.bundle: for Go the SDK's whole import
// closure as vendor/ with a go.mod that requires it, so the project builds
// with no module proxy; for C warden.h and warden.c; for AssemblyScript the
// SDK package as warden-sdk/.
package scaffold

//go:generate go run ./gen -o sdk.bundle

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/warden-run/warden/internal/scaffold/bundle"
	"github.com/warden-run/warden/tool"
)

// The templates of every language; a language joins by adding its folder.
//
//go:embed all:templates
var templates embed.FS

//go:embed sdk.bundle
var sdkBundle []byte

// Languages are the values of --lang, in the order help shows them.
var Languages = []string{"go", "c", "assemblyscript", "wat"}

// aliases are the other names people write for a language.
var aliases = map[string]string{"golang": "go", "as": "assemblyscript", "ts": "assemblyscript"}

// Language returns the language a --lang value names: one of Languages or
// an alias of one (golang, as, ts), in any case.
func Language(name string) (string, error) {
	lang := strings.ToLower(strings.TrimSpace(name))
	if a, ok := aliases[lang]; ok {
		lang = a
	}
	for _, l := range Languages {
		if l == lang {
			return l, nil
		}
	}
	return "", fmt.Errorf("unknown language %q: want one of %s (or golang, as, ts)", name, strings.Join(Languages, ", "))
}

// Placeholder is replaced by the tool's name in template paths and contents.
const Placeholder = "__NAME__"

var (
	sdkOnce  sync.Once
	sdkFiles []bundle.File
	sdkErr   error
)

func sdk() ([]bundle.File, error) {
	sdkOnce.Do(func() { sdkFiles, sdkErr = bundle.Parse(sdkBundle) })
	return sdkFiles, sdkErr
}

// HasTemplate reports whether this build of warden carries lang's template.
func HasTemplate(lang string) bool {
	_, err := fs.Stat(templates, "templates/"+lang)
	return err == nil
}

// New writes the project parentDir/name for a tool named name in lang (a
// name Language accepts) and returns its directory. The directory may exist
// only if it is empty.
func New(parentDir, name, lang string) (dir string, err error) {
	if !tool.ValidName(name) {
		return "", fmt.Errorf("%q is not a valid tool name: 1-128 of A-Z a-z 0-9 _ - . starting with a letter or digit", name)
	}
	if lang, err = Language(lang); err != nil {
		return "", err
	}
	if !HasTemplate(lang) {
		return "", fmt.Errorf("this warden has no template for %s (internal/scaffold/templates/%s is missing from its build)", lang, lang)
	}
	dir = filepath.Join(parentDir, name)
	entries, err := os.ReadDir(dir)
	switch {
	case err == nil && len(entries) > 0:
		return "", fmt.Errorf("%s already exists and is not empty: choose another name or --dir", dir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("new project %s: %w", dir, err)
	}
	files, err := projectFiles(name, lang)
	if err != nil {
		return "", err
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// projectFiles is everything New writes, relative to the project folder.
func projectFiles(name, lang string) ([]bundle.File, error) {
	var files []bundle.File
	root := "templates/" + lang
	err := fs.WalkDir(templates, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := templates.ReadFile(p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, root+"/")
		files = append(files, bundle.File{
			Path: strings.ReplaceAll(rel, Placeholder, name),
			Data: []byte(strings.ReplaceAll(string(data), Placeholder, name)),
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	files = append(files, bundle.File{Path: "config.yaml", Data: []byte(configYAML(name))})
	extra, err := sdkFor(name, lang)
	if err != nil {
		return nil, err
	}
	return append(files, extra...), nil
}

func configYAML(name string) string {
	return `# warden's config for this project: warden -c config.yaml call|serve|tools.
# See warden's docs/config.md for every key.
tools:
  # The module this project builds (build/` + name + `.wasm) is loaded from
  # here. Not the project folder itself: warden's tools dir is closed to
  # every tool, and the tool may be granted the project's files (fs.read).
  dir: build
  # Compiled code is cached in your user cache dir (tools.cache_dir), keyed
  # by the module's content: each build compiles once, not on every call.
  grants:
    # What the tool may use (files, network, ...); nothing yet.
    ` + quoteKey(name) + `: {}
`
}

// quoteKey quotes a tool name as a YAML key when YAML would read it as
// something other than that string (a number, true, null, ...).
func quoteKey(name string) string {
	for _, r := range name {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && r != '_' && r != '-' {
			return `"` + name + `"`
		}
	}
	switch strings.ToLower(name) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return `"` + name + `"`
	}
	return name
}

// sdkFor is the language's share of sdk.bundle, placed in the project.
func sdkFor(name, lang string) ([]bundle.File, error) {
	all, err := sdk()
	if err != nil {
		return nil, fmt.Errorf("warden's SDK archive: %w", err)
	}
	var prefix, into string
	switch lang {
	case "go":
		prefix = "go/"
	case "c":
		prefix = "c/"
	case "assemblyscript":
		prefix, into = "assemblyscript/", "warden-sdk/"
	default:
		return nil, nil
	}
	var files []bundle.File
	var modulesTxt []byte
	for _, f := range all {
		if !strings.HasPrefix(f.Path, prefix) {
			continue
		}
		rel := strings.TrimPrefix(f.Path, prefix)
		if rel == "vendor/modules.txt" {
			modulesTxt = f.Data
		}
		files = append(files, bundle.File{Path: path.Join(into, rel), Data: f.Data})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("warden's SDK archive has no %s SDK: run go generate ./internal/scaffold", lang)
	}
	if lang == "go" {
		mod, err := goMod(name, modulesTxt)
		if err != nil {
			return nil, err
		}
		files = append(files, bundle.File{Path: "go.mod", Data: mod})
	}
	return files, nil
}

// goMod requires exactly the vendored modules, at the versions
// vendor/modules.txt records, so go build uses vendor/ (-mod=vendor is the
// default when vendor/modules.txt matches go.mod) and never the network.
func goMod(name string, modulesTxt []byte) ([]byte, error) {
	if modulesTxt == nil {
		return nil, errors.New("warden's SDK archive has no vendor/modules.txt: run go generate ./internal/scaffold")
	}
	var direct, indirect []string
	goVersion := bundle.SDKGoVersion
	for _, line := range strings.Split(string(modulesTxt), "\n") {
		if v, ok := strings.CutPrefix(line, "## explicit; go "); ok && versionLess(goVersion, v) {
			goVersion = v
		}
		fields := strings.Fields(line)
		if len(fields) != 3 || fields[0] != "#" {
			continue
		}
		req := "\t" + fields[1] + " " + fields[2]
		if fields[1] == bundle.WardenModule {
			direct = append(direct, req)
		} else {
			indirect = append(indirect, req+" // indirect")
		}
	}
	sort.Strings(indirect)
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n\n// The module needs at least the go version of every module it vendors.\ngo %s\n\n", name, goVersion)
	fmt.Fprintf(&b, "// Every dependency is in vendor/ (written by warden new): the build\n// needs no module proxy. Do not run go mod tidy unless you want to\n// fetch them instead.\nrequire (\n%s\n)\n\nrequire (\n%s\n)\n",
		strings.Join(direct, "\n"), strings.Join(indirect, "\n"))
	return []byte(b.String()), nil
}

// versionLess compares dotted go versions numerically (1.9 < 1.23.0).
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			fmt.Sscan(as[i], &x)
		}
		if i < len(bs) {
			fmt.Sscan(bs[i], &y)
		}
		if x != y {
			return x < y
		}
	}
	return false
}
