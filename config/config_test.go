package config

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoad(t *testing.T) {
	path := writeConfig(t, `
project:
  root: proj
  roots: {notes: /srv/notes}
tools:
  dir: ./mods
  defaults: {timeout: 5s, memory: 64MiB, max_output: 512KiB}
  limits:
    jq: {timeout: 2s, isolation: shared}
  grants:
    symbols: {fs: {read: [src, "notes:daily"]}, lsp: [go]}
    Notes: {memory: read-write, memory_topics: [arch]}
    fetch: {net: [api.github.com]}
security:
  deny: ["**/secrets/**"]
`)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	if c.Project.Root != filepath.Join(dir, "proj") || c.Tools.Dir != filepath.Join(dir, "mods") {
		t.Errorf("paths not resolved against the config dir: %q %q", c.Project.Root, c.Tools.Dir)
	}
	l := c.ModuleLimits("jq")
	want := runtime.Limits{Timeout: 2 * time.Second, Memory: 64 << 20, MaxOutput: 512 << 10, Fuel: runtime.DefaultFuel,
		LoadBudget: 10 * time.Second, Isolation: runtime.IsolationShared, MaxInstances: runtime.DefaultMaxInstances,
		LogBytes: runtime.DefaultLogBytes, LogLines: runtime.DefaultLogLines, CompileBudget: runtime.DefaultCompileBudget}
	if l != want {
		t.Errorf("limits of jq = %+v\nwant %+v", l, want)
	}
	if g := c.Grants("symbols"); len(g.FS.Read) != 2 || g.LSP[0] != "go" {
		t.Errorf("grants of symbols = %+v", g)
	}
	if g := c.Grants("notes"); g.Memory != tool.MemoryReadWrite {
		t.Errorf("grant keys match case-insensitively: %+v", g)
	}
	if g := c.Grants("unlisted"); !g.IsZero() {
		t.Errorf("an unlisted tool is granted %+v", g)
	}
	if c.Security.Deny[0] != "**/secrets/**" {
		t.Error(c.Security.Deny)
	}
}

func TestEnvOverride(t *testing.T) {
	t.Setenv("WARDEN_SERVER_TOKEN", "s3cret")
	t.Setenv("WARDEN_TOOLS_DEFAULTS_TIMEOUT", "7s")
	c, err := Load(writeConfig(t, "server: {token: from-file}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Token != "s3cret" || c.Tools.Defaults.Timeout != 7*time.Second {
		t.Errorf("env did not override: token %q timeout %s", c.Server.Token, c.Tools.Defaults.Timeout)
	}
}

func TestInvalid(t *testing.T) {
	cases := map[string]string{
		"tools: {defaults: {timeout: soon}}":               "timeout",
		"tools: {defaults: {memory: lots}}":                `"lots" is not a size`,
		"tools: {defaults: {isolation: sometimes}}":        `tools.defaults: isolation: must be call, session or shared`,
		"tools: {limits: {jq: {memory: 5GiB}}}":            "tools.limits.jq: memory: at most 4GiB",
		"tools: {grants: {x: {memory: all}}}":              "tools.grants.x.memory: must be read or read-write",
		"tools: {grants: {x: {lsp: [cobol]}}}":             `tools.grants.x.lsp: no language "cobol"`,
		"tools: {grants: {x: {fs: {read: [\"docs:a\"]}}}}": `names root "docs"`,
		"tools: {pins: {echo: abc}}":                       "tools.pins.echo: must be a lowercase hex sha256",
		"server: {page_size: 0}":                           "server.page_size: must be at least 1",
		"env: {values: {K: {value: a, from_env: B}}}":      "env.values.k: set exactly one of value or from_env",
		"log: {level: chatty}":                             "log.level",
		"tools: {dirr: x}":                                 "dirr",
		"tools: [1, 2":                                     "config",
		"lsp: {languages: {rust: {args: [x]}}}":            "lsp.languages.rust.command: must not be empty",
	}
	for body, want := range cases {
		path := writeConfig(t, body)
		_, err := Load(path)
		if err == nil {
			t.Errorf("%s: loaded", body)
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s:\n error %q\n want it to contain %q and the file name", body, err, want)
		}
	}
}

func TestWatch(t *testing.T) {
	path := writeConfig(t, "tools: {grants: {echo: {lsp: [go]}}}\n")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	changes := make(chan *Config, 4)
	live := NewLive(c, slog.New(slog.NewTextHandler(io.Discard, nil)), func(c *Config) { changes <- c })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := live.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	// An invalid edit is refused: the previous config stays in force.
	if err := os.WriteFile(path, []byte("tools: {grants: {echo: {memory: everything}}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := live.Reload(); err == nil || !strings.Contains(err.Error(), "tools.grants.echo.memory") {
		t.Fatalf("Reload of an invalid file: %v", err)
	}
	if g := live.Current().Grants("echo"); len(g.LSP) != 1 {
		t.Fatalf("the invalid config replaced the previous one: %+v", g)
	}
	// A valid edit (written by rename, as editors do) applies.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte("tools: {grants: {echo: {net: [example.com]}}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	select {
	case next := <-changes:
		if g := next.Grants("echo"); len(g.Net) != 1 || len(g.LSP) != 0 {
			t.Fatalf("reloaded grants %+v", g)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no reload after the file changed")
	}
	if g := live.Current().Grants("echo"); len(g.Net) != 1 {
		t.Fatalf("Current() = %+v", g)
	}
}
