package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// sample has what people write: aligned comments, non-ASCII, blank lines,
// flow and block collections, quoting.
const sample = `# warden config — top comment
project:
  root: .   # the project
  roots: {notes: ../notes}

tools:
  dir: bin/tools
  defaults:
    timeout: 30s          # deadline of one call
    memory: 128MiB        # linear memory — per instance
  grants:
    echo: {}              # nothing yet
    fetch:
      net:
        - api.github.com  # the API
        - "uploads.github.com"
      env: [GITHUB_TOKEN]
    symbols: {fs: {read: [src, "notes:daily"]}, lsp: [go]}
  # approved modules
  pins: {}

security:
  deny: []   # extra rules
`

func grant(key string, values ...string) GrantChange { return GrantChange{Key: key, Values: values} }

// TestEditSplices checks the exact text of each edit: only the entry that
// changes is rewritten, every other byte stays.
func TestEditSplices(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Document) error
		old  string // the text replaced...
		new  string // ...by this, once
	}{
		{"empty flow mapping becomes block",
			func(d *Document) error { return d.Grant("echo", grant("fs.read", "src")) },
			"    echo: {}              # nothing yet\n",
			"    echo:                 # nothing yet\n      fs:\n        read: [src]\n"},
		{"append to a block list keeps its items' lines",
			func(d *Document) error { return d.Grant("fetch", grant("net", "*.githubusercontent.com")) },
			"        - \"uploads.github.com\"\n",
			"        - \"uploads.github.com\"\n        - \"*.githubusercontent.com\"\n"},
		{"remove from a block list deletes only that line",
			func(d *Document) error { return d.Revoke("fetch", grant("net", "API.github.com")) },
			"        - api.github.com  # the API\n",
			""},
		{"append to a flow list",
			func(d *Document) error { return d.Grant("fetch", grant("env", "NPM_TOKEN")) },
			"env: [GITHUB_TOKEN]",
			"env: [GITHUB_TOKEN, NPM_TOKEN]"},
		{"new key in a block mapping goes after its last entry",
			func(d *Document) error { return d.Grant("fetch", grant("memory", "read")) },
			"      env: [GITHUB_TOKEN]\n",
			"      env: [GITHUB_TOKEN]\n      memory: read\n"},
		{"non-empty flow mapping stays flow",
			func(d *Document) error { return d.Grant("symbols", grant("net", "api.github.com")) },
			`symbols: {fs: {read: [src, "notes:daily"]}, lsp: [go]}`,
			`symbols: {fs: {read: [src, "notes:daily"]}, lsp: [go], net: [api.github.com]}`},
		{"new tool",
			func(d *Document) error { return d.Grant("jq", grant("fs.read", "."), grant("fs.write", "out")) },
			"    symbols: {fs: {read: [src, \"notes:daily\"]}, lsp: [go]}\n",
			"    symbols: {fs: {read: [src, \"notes:daily\"]}, lsp: [go]}\n    jq:\n      fs:\n        read: [.]\n        write: [out]\n"},
		{"pin into empty pins",
			func(d *Document) error { return d.Pin("Echo", strings.Repeat("ab", 32)) },
			"  pins: {}\n",
			"  pins:\n    echo: " + strings.Repeat("ab", 32) + "\n"},
		{"revoking the last grant leaves {}",
			func(d *Document) error { return d.Revoke("fetch", grant("net"), grant("env")) },
			"    fetch:\n      net:\n        - api.github.com  # the API\n        - \"uploads.github.com\"\n      env: [GITHUB_TOKEN]\n",
			"    fetch: {}\n"},
		{"revoke from a flow mapping prunes fs",
			func(d *Document) error { return d.Revoke("symbols", grant("fs.read", "src", "notes:daily")) },
			`symbols: {fs: {read: [src, "notes:daily"]}, lsp: [go]}`,
			`symbols: {lsp: [go]}`},
		{"bind an empty flow entry to its module",
			func(d *Document) error { return d.BindGrant("echo", "echo") },
			"    echo: {}              # nothing yet\n",
			"    echo:                 # nothing yet\n      module: echo\n"},
		{"bind a block entry to the module it meant: the module field goes last, the rest stays",
			func(d *Document) error { return d.BindGrant("fetch", "fetch") },
			"      env: [GITHUB_TOKEN]\n",
			"      env: [GITHUB_TOKEN]\n      module: fetch\n"},
		{"bind a flow entry",
			func(d *Document) error { return d.BindGrant("Symbols", "symbols") },
			`symbols: {fs: {read: [src, "notes:daily"]}, lsp: [go]}`,
			`symbols: {fs: {read: [src, "notes:daily"]}, lsp: [go], module: symbols}`},
		{"move an empty entry to another module",
			func(d *Document) error { return d.BindGrant("echo", "Fetch-v2.1") },
			"    echo: {}              # nothing yet\n",
			"    echo:                 # nothing yet\n      module: Fetch-v2.1\n"},
		{"bind a new tool to a module whose name reads as a number",
			func(d *Document) error { return d.BindGrant("jq", "1e3") },
			"    symbols: {fs: {read: [src, \"notes:daily\"]}, lsp: [go]}\n",
			"    symbols: {fs: {read: [src, \"notes:daily\"]}, lsp: [go]}\n    jq:\n      module: \"1e3\"\n"},
		{"revoke --all keeps the module",
			func(d *Document) error {
				if err := d.BindGrant("fetch", "fetch"); err != nil {
					return err
				}
				return d.RevokeAll("fetch")
			},
			"    fetch:\n      net:\n        - api.github.com  # the API\n        - \"uploads.github.com\"\n      env: [GITHUB_TOKEN]\n",
			"    fetch:\n      module: fetch\n"},
		{"grant of what is granted changes nothing",
			func(d *Document) error { return d.Grant("fetch", grant("env", "github_token")) },
			"", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := ParseDocument([]byte(sample))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.edit(d); err != nil {
				t.Fatal(err)
			}
			want := sample
			if c.old != "" {
				if strings.Count(sample, c.old) != 1 {
					t.Fatalf("bad test: %q is not once in the sample", c.old)
				}
				want = strings.Replace(sample, c.old, c.new, 1)
			}
			if got := string(d.Bytes()); got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestEditRoundTrip: a grant then its revoke gives back the file byte for
// byte, whatever the layout of the entry.
func TestEditRoundTrip(t *testing.T) {
	for _, tc := range []struct{ tool, key, value string }{
		{"echo", "fs.read", "src"},
		{"echo", "memory", "read"},
		{"fetch", "net", "*.example.com"},
		{"fetch", "env", "NPM_TOKEN"},
		{"fetch", "fs.write", "out/reports"},
		{"symbols", "lsp", "rust"},
		{"symbols", "memory.topics", "arch/db"},
	} {
		d, err := ParseDocument([]byte(sample))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Grant(tc.tool, grant(tc.key, tc.value)); err != nil {
			t.Fatalf("grant %s %s=%s: %v", tc.tool, tc.key, tc.value, err)
		}
		if string(d.Bytes()) == sample {
			t.Fatalf("grant %s %s=%s changed nothing", tc.tool, tc.key, tc.value)
		}
		if err := d.Revoke(tc.tool, grant(tc.key, tc.value)); err != nil {
			t.Fatalf("revoke %s %s=%s: %v", tc.tool, tc.key, tc.value, err)
		}
		if got := string(d.Bytes()); got != sample {
			t.Errorf("grant+revoke %s %s=%s:\n%s", tc.tool, tc.key, tc.value, got)
		}
	}
}

func TestEditMemoryLevels(t *testing.T) {
	d, _ := ParseDocument([]byte(sample))
	get := func() string {
		n, err := d.Get("tools", "grants", "echo", "memory")
		if err != nil {
			t.Fatal(err)
		}
		if n == nil {
			return ""
		}
		return n.Value
	}
	steps := []struct {
		do   func() error
		want string
	}{
		{func() error { return d.Grant("echo", grant("memory", "read-write")) }, "read-write"},
		{func() error { return d.Grant("echo", grant("memory", "read")) }, "read-write"}, // grant never lowers
		{func() error { return d.Revoke("echo", grant("memory", "read-write")) }, ""},    // revoking the level granted revokes memory
		{func() error { return d.Grant("echo", grant("memory", "read-write")) }, "read-write"},
		{func() error { return d.Revoke("echo", grant("memory", "read")) }, ""}, // read is part of read-write
	}
	for i, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := get(); got != s.want {
			t.Fatalf("step %d: memory = %q, want %q", i, got, s.want)
		}
	}
	if err := d.Revoke("echo", grant("memory", "read")); err == nil || !strings.Contains(err.Error(), "tools.grants.echo.memory: read is not granted (granted: nothing)") {
		t.Errorf("revoking what is not granted: %v", err)
	}
}

func TestEditRefusals(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Document) error
		want string
	}{
		{"unknown key", func(d *Document) error { return d.Grant("echo", grant("fs.exec", "x")) },
			`tools.grants.echo: unknown grant key "fs.exec"`},
		{"bad net host", func(d *Document) error { return d.Grant("echo", grant("net", "https://exa mple.com/path")) },
			"tools.grants.echo.net: "},
		{"bad topic", func(d *Document) error { return d.Grant("echo", grant("memory.topics", "../etc")) },
			"tools.grants.echo.memory_topics: "},
		{"bad memory level", func(d *Document) error { return d.Grant("echo", grant("memory", "write")) },
			`tools.grants.echo.memory: must be read or read-write, got "write"`},
		{"bad env key", func(d *Document) error { return d.Grant("echo", grant("env", "A-B")) },
			`tools.grants.echo.env: "A-B" is not a key`},
		{"bad tool name", func(d *Document) error { return d.Grant("a b", grant("env", "X")) },
			`"a b" is not a tool name`},
		{"revoke what is not granted", func(d *Document) error { return d.Revoke("fetch", grant("env", "NPM_TOKEN")) },
			"tools.grants.fetch.env: NPM_TOKEN is not granted (granted: GITHUB_TOKEN)"},
		{"grant without a value", func(d *Document) error { return d.Grant("echo", grant("net")) },
			"tools.grants.echo.net: grant net needs a value"},
		{"a list where a mapping must be", func(d *Document) error { return d.Set(Str("x"), "security", "deny", "more") },
			"security.deny: is a list, not a mapping"},
	}
	for _, c := range cases {
		d, _ := ParseDocument([]byte(sample))
		err := c.edit(d)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
		if string(d.Bytes()) != sample {
			t.Errorf("%s: the document changed", c.name)
		}
	}
}

func TestEditLayouts(t *testing.T) {
	sum := strings.Repeat("0f", 32)
	cases := []struct{ name, in, want string }{
		{"empty file", "", "tools:\n  pins:\n    m: " + sum + "\n"},
		{"comments only, no final newline", "# hi", "# hi\ntools:\n  pins:\n    m: " + sum + "\n"},
		{"null value", "tools:\n  pins:\n  dir: x\n", "tools:\n  pins:\n    m: " + sum + "\n  dir: x\n"},
		{"tilde", "tools:\n  pins: ~ # none\n", "tools:\n  pins:   # none\n    m: " + sum + "\n"},
		{"replace a pin, case-insensitive key", "tools:\n  pins:\n    M: 'old'   # was\n", "tools:\n  pins:\n    M: " + sum + " # was\n"},
		{"four-space indent", "tools:\n    pins:\n        a: " + strings.Repeat("1", 64) + "\n", "tools:\n    pins:\n        a: " + strings.Repeat("1", 64) + "\n        m: " + sum + "\n"},
		{"block literal before", "env:\n  values:\n    K:\n      value: |\n        line\n\n        # not a comment\nlog: {level: info}\n",
			"env:\n  values:\n    K:\n      value: |\n        line\n\n        # not a comment\nlog: {level: info}\ntools:\n  pins:\n    m: " + sum + "\n"},
	}
	for _, c := range cases {
		d, err := ParseDocument([]byte(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := d.Pin("m", sum); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := string(d.Bytes()); got != c.want {
			t.Errorf("%s: got\n%q\nwant\n%q", c.name, got, c.want)
		}
	}
}

// TestEditQuotesNumbers: a value YAML would read as a number is quoted.
func TestEditQuotesNumbers(t *testing.T) {
	d, _ := ParseDocument([]byte("tools:\n  pins: {}\n"))
	zeros := strings.Repeat("0", 64)
	if err := d.Pin("m", zeros); err != nil {
		t.Fatal(err)
	}
	if got, want := string(d.Bytes()), "tools:\n  pins:\n    m: \""+zeros+"\"\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestEditRefusesLayout: anchors are refused, not edited through.
func TestEditRefusesLayout(t *testing.T) {
	in := "base: &b {net: [a.com]}\ntools:\n  grants:\n    t: *b\n"
	d, _ := ParseDocument([]byte(in))
	if err := d.Grant("t", grant("net", "b.com")); err == nil || !strings.Contains(err.Error(), "tools.grants.t: is an alias") {
		t.Errorf("edit through an alias: %v", err)
	}
	if string(d.Bytes()) != in {
		t.Error("document changed")
	}
	for _, in := range []string{
		"tools:\n  pins: &p {}\nother: *p\n",                 // an anchored value
		"tools:\n  pins:\n    a: one\n      two\n  dir: x\n", // a multi-line plain scalar
	} {
		d, _ := ParseDocument([]byte(in))
		if err := d.Pin("m", strings.Repeat("ab", 32)); err == nil || !strings.Contains(err.Error(), "edit the file by hand") {
			t.Errorf("%q: %v", in, err)
		}
		if string(d.Bytes()) != in {
			t.Errorf("%q: document changed", in)
		}
	}
}

func TestGrantChangeParse(t *testing.T) {
	c, err := ParseGrantChange("FS.Read= src , docs,")
	if err != nil || c.Key != "fs.read" || !slices.Equal(c.Values, []string{"src", "docs"}) {
		t.Errorf("got %+v, %v", c, err)
	}
	if c, err := ParseGrantChange("net"); err != nil || c.Values != nil {
		t.Errorf("bare key: %+v, %v", c, err)
	}
	for _, bad := range []string{"fs=src", "net=", "memory=read,read-write"} {
		if _, err := ParseGrantChange(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestEditFile: a valid change replaces the file and loads; an invalid one
// (caught only by Load) leaves the file byte for byte, mtime included, and
// no temporary file behind.
func TestEditFile(t *testing.T) {
	path := writeConfig(t, sample)
	dir := filepath.Dir(path)
	cfg, err := EditFile(path, func(d *Document) error { return d.Grant("echo", grant("fs.read", "src")) })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.File != path || cfg.Dir != dir || !slices.Equal(granted(cfg, "echo").FS.Read, []string{"src"}) {
		t.Errorf("returned config: file %q dir %q grants %+v", cfg.File, cfg.Dir, granted(cfg, "echo"))
	}
	if loaded, err := Load(path); err != nil || !slices.Equal(granted(loaded, "echo").FS.Read, []string{"src"}) {
		t.Errorf("file not written: %v", err)
	}

	before, _ := os.ReadFile(path)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(path, old, old)
	for _, c := range []struct {
		change GrantChange
		want   string
	}{
		{grant("lsp", "cobol"), `tools.grants.echo.lsp: no language "cobol" in lsp.languages`},
		{grant("fs.read", "nowhere:x"), `tools.grants.echo.fs: path "nowhere:x" names root "nowhere"`},
		{grant("net", "exa_mple..com"), "tools.grants.echo.net"},
	} {
		_, err := EditFile(path, func(d *Document) error { return d.Grant("echo", c.change) })
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want it to name %s and contain %q", c.change, err, path, c.want)
		}
	}
	after, _ := os.ReadFile(path)
	info, _ := os.Stat(path)
	if string(after) != string(before) || !info.ModTime().Equal(old) {
		t.Error("a refused change touched the file")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}

// TestEditFileSymlink: the file a symlink points at is edited; the link stays.
func TestEditFileSymlink(t *testing.T) {
	real := writeConfig(t, sample)
	link := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := EditFile(link, func(d *Document) error { return d.Grant("echo", grant("env", "HOME")) }); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("symlink replaced: %v", err)
	}
	if got, _ := os.ReadFile(real); !strings.Contains(string(got), "env: [HOME]") {
		t.Errorf("target not edited:\n%s", got)
	}
}

// TestBindGrantRefusesBadNames: the module field only takes module names.
func TestBindGrantRefusesBadNames(t *testing.T) {
	for _, module := range []string{"", ".", "..", "../x", "a b", "-x", "x\n"} {
		d, err := ParseDocument([]byte(sample))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.BindGrant("echo", module); err == nil || !strings.Contains(err.Error(), "tools.grants.echo.module") {
			t.Errorf("BindGrant(echo, %q): %v", module, err)
		}
		if string(d.Bytes()) != sample {
			t.Errorf("BindGrant(echo, %q) changed the text", module)
		}
	}
	d, _ := ParseDocument([]byte(sample))
	if err := d.BindGrant("..", "echo"); err == nil || !strings.Contains(err.Error(), "not a tool name") {
		t.Errorf("BindGrant(.., echo): %v", err)
	}
	if err := d.BindGrant("echo", "echo"); err != nil {
		t.Fatal(err)
	}
	once := string(d.Bytes())
	if err := d.BindGrant("ECHO", "echo"); err != nil || string(d.Bytes()) != once {
		t.Errorf("binding again to the same module changed the text (%v)", err)
	}
}

// TestCheckEdit: CheckEdit accepts what EditFile would write and refuses
// what it would refuse, with the same error, and writes nothing either way.
func TestCheckEdit(t *testing.T) {
	path := writeConfig(t, sample)
	dir := filepath.Dir(path)
	before, _ := os.ReadFile(path)
	if err := CheckEdit(path, func(d *Document) error { return d.Grant("echo", grant("fs.read", "src")) }); err != nil {
		t.Fatalf("an edit config takes: %v", err)
	}
	colon := func(d *Document) error { return d.Grant("echo", grant("fs.read", "docs/a:b.md")) }
	checked := CheckEdit(path, colon)
	if checked == nil || !strings.Contains(checked.Error(), `path "docs/a:b.md" names root "docs/a"`) {
		t.Fatalf("a path with ':' config refuses: %v", checked)
	}
	if _, edited := EditFile(path, colon); edited == nil || edited.Error() != checked.Error() {
		t.Fatalf("EditFile says %v, CheckEdit %v", edited, checked)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatalf("CheckEdit wrote:\n%s", after)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}

// TestGrantBinding: the module an entry belongs to, as Config.GrantModule
// reads it once loaded.
func TestGrantBinding(t *testing.T) {
	d, err := ParseDocument([]byte(strings.Replace(sample, "  # approved modules", "    bound: {module: other}\n  # approved modules", 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool, module string
		exists       bool
	}{{"echo", "echo", true}, {"Fetch", "fetch", true}, {"bound", "other", true}, {"missing", "", false}} {
		module, exists, err := d.GrantBinding(c.tool)
		if err != nil || module != c.module || exists != c.exists {
			t.Errorf("GrantBinding(%s) = %q, %v, %v", c.tool, module, exists, err)
		}
	}
}

// TestBindGrantNeverMovesAGrant: an entry that grants something (or holds
// the tool's config) belongs to its module; binding it to another module
// would hand that module all of it, so it is refused and the document
// keeps every byte. An entry holding nothing moves.
func TestBindGrantNeverMovesAGrant(t *testing.T) {
	const withConfig = "tools:\n  grants:\n    jq:\n      module: jq\n      config: {token: {from_env: JQ_TOKEN}}\n"
	for _, c := range []struct {
		doc, tool, module, want string
	}{
		// No module field: the entry belongs to the module named like the tool.
		{sample, "fetch", "evil", "tools.grants.fetch belongs to module fetch and holds net, env: binding it to module evil"},
		{sample, "Symbols", "nav", "tools.grants.symbols belongs to module symbols and holds fs, lsp"},
		{withConfig, "jq", "JQ", "tools.grants.jq belongs to module jq and holds config"},
	} {
		d, err := ParseDocument([]byte(c.doc))
		if err != nil {
			t.Fatal(err)
		}
		err = d.BindGrant(c.tool, c.module)
		var move *GrantMoveError
		if !errors.As(err, &move) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing written") {
			t.Errorf("BindGrant(%s, %s): %v, want %q", c.tool, c.module, err, c.want)
		}
		if string(d.Bytes()) != c.doc {
			t.Errorf("BindGrant(%s, %s) changed the text:\n%s", c.tool, c.module, d.Bytes())
		}
	}
}

// TestRevokeTheLastTopicRevokesMemory: a memory level over topics is one
// grant; no topics means the whole store. Revoking the last topic (or the
// whole memory.topics key) must not leave the level alone, which would
// widen "read on notes" into "read on everything": the level goes too.
func TestRevokeTheLastTopicRevokesMemory(t *testing.T) {
	const doc = "tools:\n  grants:\n    notes:\n      module: notes\n      memory: read-write\n      memory_topics: [notes, arch]\n"
	for _, c := range []struct {
		name   string
		change GrantChange
		want   string
	}{
		{"one of two topics", grant("memory.topics", "arch"), "tools:\n  grants:\n    notes:\n      module: notes\n      memory: read-write\n      memory_topics: [notes]\n"},
		{"every topic by value", grant("memory.topics", "notes", "arch"), "tools:\n  grants:\n    notes:\n      module: notes\n"},
		{"the whole key", GrantChange{Key: "memory.topics"}, "tools:\n  grants:\n    notes:\n      module: notes\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := ParseDocument([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Revoke("notes", c.change); err != nil {
				t.Fatal(err)
			}
			if got := string(d.Bytes()); got != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

// TestParseGrantChangeShowsNoCredential: a URL typed where KEY=VALUE goes
// is named without its user:password@, and so is one typed as the value of
// any grant key: `warden grant` (EditFile: Grant, then Load) refuses it
// with no byte of the credential, and writes nothing. `warden revoke` of
// it says it is not granted the same way.
func TestParseGrantChangeShowsNoCredential(t *testing.T) {
	const secret = "hunter2hunter2"
	_, err := ParseGrantChange("https://u:" + secret + "@api.example.com")
	want := `unknown grant key "https://api.example.com" (shown without what precedes the @) (known: `
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("ParseGrantChange: %v, want %s…", err, want)
	}
	path := writeConfig(t, sample)
	before, _ := os.ReadFile(path)
	for _, c := range []struct{ arg, want string }{
		{"env=https://u:" + secret + "@h", `tools.grants.echo.env: "https://h" (shown without what precedes the @) is not a key`},
		{"env=" + secret + "@h", `tools.grants.echo.env: "h" (shown without what precedes the @) is not a key`},
		{"lsp=https://u:" + secret + "@h", `tools.grants.echo.lsp: "https://h" is not a language name (1-64 of A-Z a-z 0-9 _ . + -) (the value is shown without what precedes the @)`},
		// The shown form passes the grammar; the refusal says why the value does not.
		{"lsp=" + secret + "@go", `tools.grants.echo.lsp: "go" (shown without what precedes the @) is not a lsp value: no lsp value has an @`},
		{"memory.topics=https://u:" + secret + "@h", `tools.grants.echo.memory_topics: topic "https://h": byte 0x3a at offset 5`},
		{"memory=u:" + secret + "@h", `tools.grants.echo.memory: must be read or read-write, got "h" (the value is shown without what precedes the @)`},
		{"client=u:" + secret + "@h", `tools.grants.echo.client: unknown client feature "h" (known: `},
		{"fs.read=https://u:" + secret + "@h/x", `tools.grants.echo.fs: path "https://h/x" (shown without what precedes the @) names root "https", which project.roots does not define`},
		// The root is the token here: it is not named.
		{"fs.write=" + secret + ":x@h/x", `tools.grants.echo.fs: path "h/x" (shown without what precedes the @) names a root, which project.roots does not define`},
	} {
		change, err := ParseGrantChange(c.arg)
		if err != nil {
			t.Fatalf("%s: %v", c.arg, err)
		}
		_, err = EditFile(path, func(d *Document) error { return d.Grant("echo", change) })
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), secret) {
			t.Errorf("grant %s: %v\n want it to contain %q and not the secret", c.arg, err, c.want)
		}
		_, err = EditFile(path, func(d *Document) error { return d.Revoke("echo", change) })
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("revoke %s: %v, want a refusal without the secret", c.arg, err)
		}
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatalf("a refused grant changed the file:\n%s", after)
	}
}

// TestGrantRefusesWardenKeys: `warden grant` (and every other grant edit:
// "allow always", install) refuses a WARDEN_* env key, warden's own
// configuration, and leaves the file byte for byte.
func TestGrantRefusesWardenKeys(t *testing.T) {
	path := writeConfig(t, sample)
	before, _ := os.ReadFile(path)
	for _, key := range []string{"WARDEN_SERVER_TOKEN", "warden_memory_backend"} {
		_, err := EditFile(path, func(d *Document) error { return d.Grant("echo", grant("env", key)) })
		if err == nil || !strings.Contains(err.Error(), `"`+key+`" is warden's own configuration`) {
			t.Errorf("grant env=%s: %v", key, err)
		}
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("the refused grant changed the file")
	}
}
