package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestProblemsWhereWritten: every unknown key at every depth, and every
// value its key does not take, is reported as FILE:LINE with its key path,
// a suggestion when a known key is one slip away, no Go type names, and in
// the order of the file.
func TestProblemsWhereWritten(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"top level", "tool:\n  dir: x\n",
			`config.yaml:1: unknown key "tool" under the top level (did you mean "tools"?)`},
		{"top level, nothing close", "color: red\n",
			`config.yaml:1: unknown key "color" under the top level`},
		{"nested", "tools:\n  defaults:\n    timeoutt: 3s\n",
			`config.yaml:3: unknown key "timeoutt" under "tools.defaults" (did you mean "timeout"?)`},
		{"case is folded", "Tools:\n  Dirr: x\n",
			`config.yaml:2: unknown key "Dirr" under "tools" (did you mean "dir"?)`},
		{"map of struct", "tools:\n  grants:\n    linecount:\n      fs:\n        raed: [data]\n",
			`config.yaml:5: unknown key "raed" under "tools.grants.linecount.fs" (did you mean "read"?)`},
		{"map of struct, top of the entry", "tools:\n  grants:\n    linecount:\n      modul: x\n",
			`config.yaml:4: unknown key "modul" under "tools.grants.linecount" (did you mean "module"?)`},
		{"list item", "server:\n  oauth:\n    issuers:\n      - issuer: https://a\n        jwks: https://a/k\n",
			`config.yaml:5: unknown key "jwks" under "server.oauth.issuers[0]"`},
		{"list item of the wrong type", "tools:\n  grants:\n    x:\n      net:\n        - api.example.com\n        - {host: x}\n",
			`config.yaml:6: tools.grants.x.net[1]: want a single value, got a mapping`},
		{"map of list", "tools:\n  scopes:\n    admin: {a: b}\n",
			`config.yaml:3: tools.scopes.admin: want a list, got a mapping`},
		{"duration", "tools:\n  defaults:\n    timeout: abc\n",
			`config.yaml:3: tools.defaults.timeout: want a duration like "30s", got "abc"`},
		{"size", "server: {max_message: huge}\n",
			`config.yaml:1: server.max_message: want a size like "128MiB", got "huge"`},
		{"whole number", "server:\n  page_size: many\n",
			`config.yaml:2: server.page_size: want a whole number, got "many"`},
		{"bool", "log:\n  audit_arguments: sometimes\n",
			`config.yaml:2: log.audit_arguments: want true or false, got "sometimes"`},
		{"list where a value goes", "log:\n  level: [info]\n",
			`config.yaml:2: log.level: want a single value, got a list`},
		{"value where a mapping goes", "tools:\n  grants: echo\n",
			`config.yaml:2: tools.grants: want a mapping ("key: value" lines), got "echo"`},
		{"mapping where a list goes", "tools:\n  grants:\n    x:\n      net: {a: b}\n",
			`config.yaml:4: tools.grants.x.net: want a list, got a mapping`},
		{"merge key", "base: &b {timeoutt: 1s}\n",
			`config.yaml:1: unknown key "base" under the top level`},
		{"semantic error gains its line", "server:\n  http: x\n  page_size: 0\n",
			`config.yaml:3: server.page_size: must be at least 1, got 0`},
		{"file order", "tools:\n  defaults: {timeout: x}\ntool: {}\nservr: {}\n",
			"config.yaml:2: tools.defaults.timeout: want a duration like \"30s\", got \"x\"\n" +
				"config.yaml:3: unknown key \"tool\" under the top level (did you mean \"tools\"?)\n" +
				"config.yaml:4: unknown key \"servr\" under the top level (did you mean \"server\"?)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir)
			_, err := Load("config.yaml")
			if err == nil || err.Error() != c.want {
				t.Errorf("%q:\n got  %v\n want %s", c.body, err, c.want)
			}
		})
	}
}

// TestProblemsOfTheEnvironment: an override has no line; its variable is
// named instead.
func TestProblemsOfTheEnvironment(t *testing.T) {
	t.Setenv("WARDEN_SERVER_PAGE_SIZE", "lots")
	path := writeConfig(t, "server: {http: x}\n")
	_, err := Load(path)
	if want := `WARDEN_SERVER_PAGE_SIZE: server.page_size: want a whole number, got "lots"`; err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	t.Setenv("WARDEN_SERVER_PAGE_SIZE", "")
	t.Setenv("WARDEN_TOOLS_DEFAULTS_TIMEOUT", "soon")
	_, err = Load(path)
	if want := `WARDEN_TOOLS_DEFAULTS_TIMEOUT: tools.defaults.timeout: want a duration like "30s", got "soon"`; err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	t.Setenv("WARDEN_TOOLS_DEFAULTS_TIMEOUT", "")
	t.Setenv("WARDEN_SERVER_PAGE_SIZE", "0")
	_, err = Load(path)
	if want := `WARDEN_SERVER_PAGE_SIZE: server.page_size: must be at least 1, got 0`; err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// TestProblemsOnReloadAndEdit: a reload and warden grant's edit name the
// file as it was named at start, with the same lines.
func TestProblemsOnReloadAndEdit(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("config.yaml", []byte("tools: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load("config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	live := NewLive(c, nil, nil)
	if err := os.WriteFile("config.yaml", []byte("tools: {}\ntool: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := `config.yaml:2: unknown key "tool" under the top level (did you mean "tools"?)`
	if err := live.Reload(); err == nil || err.Error() != want {
		t.Errorf("reload: %v\nwant %s", err, want)
	}
	if got := live.Refused(); got != want {
		t.Errorf("Refused() = %q, want %q", got, want)
	}
	_, err = EditFile("config.yaml", func(d *Document) error {
		return d.Grant("echo", GrantChange{Key: "net", Values: []string{"api.example.com"}})
	})
	if err == nil || !strings.HasSuffix(err.Error(), "\n"+want) {
		t.Errorf("edit: %v\nwant it to end in %s", err, want)
	}
	if err := os.WriteFile("config.yaml", []byte("tools: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := live.Reload(); err != nil || live.Refused() != "" {
		t.Errorf("a reload of the fixed file: %v; Refused() = %q", err, live.Refused())
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"dir", "grants", "limits", "tools", "timeout"}
	for key, want := range map[string]string{
		"tool": "tools", "grant": "grants", "grnats": "grants", "limts": "limits",
		"timout": "timeout", "x": "", "color": "", "dirs": "dir", "memory": "",
	} {
		if got := closestKey(key, known); got != want {
			t.Errorf("closestKey(%q) = %q, want %q", key, got, want)
		}
	}
}

// FuzzPositions: on any YAML the position finders never panic, and every
// problem checkDocument reports names a line of the document.
func FuzzPositions(f *testing.F) {
	f.Add("tool: {}\n")
	f.Add("tools: {grants: {x: {fs: {raed: [a]}, net: {a: b}}}, defaults: {timeout: x}}")
	f.Add("a: &a {b: *a}\n<<: *a\n")
	f.Add("server:\n  oauth:\n    issuers: [{issuer: x, y: 1}, 3]\n")
	f.Add("- 1\n- 2\n")
	f.Fuzz(func(t *testing.T, body string) {
		lines := strings.Count(body, "\n") + strings.Count(body, "\r") + 1 // YAML breaks lines at \r too
		for _, p := range append(checkDocument("f", []byte(body)), checkKeysAsWritten("f", []byte(body))...) {
			if p.line < 1 || p.line > lines || !strings.HasPrefix(p.at, "f:") {
				t.Fatalf("%q: problem at %q line %d of %d: %s", body, p.at, p.line, lines, p.msg)
			}
		}
		var doc yaml.Node
		if yaml.Unmarshal([]byte(body), &doc) == nil && len(doc.Content) > 0 {
			for _, key := range []string{"tools", "tools.grants.x", `security.signatures."a.b".key`, "a.b.c"} {
				if n := keyNode(doc.Content[0], key); n != nil && (n.Line < 1 || n.Line > lines) {
					t.Fatalf("%q: %s at line %d", body, key, n.Line)
				}
			}
		}
	})
}
