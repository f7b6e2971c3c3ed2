package config

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/limits"
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
	want := limits.Module{Timeout: 2 * time.Second, Memory: 64 << 20, MaxOutput: 512 << 10, Fuel: limits.DefaultFuel,
		LoadBudget: 10 * time.Second, Isolation: limits.IsolationShared, MaxInstances: limits.DefaultMaxInstances,
		LogBytes: limits.DefaultLogBytes, LogLines: limits.DefaultLogLines, CompileBudget: limits.DefaultCompileBudget}
	if l != want {
		t.Errorf("limits of jq = %+v\nwant %+v", l, want)
	}
	if g := granted(c, "symbols"); len(g.FS.Read) != 2 || g.LSP[0] != "go" {
		t.Errorf("grants of symbols = %+v", g)
	}
	if g := granted(c, "notes"); g.Memory != tool.MemoryReadWrite {
		t.Errorf("grant keys match case-insensitively: %+v", g)
	}
	if g := granted(c, "unlisted"); !g.IsZero() {
		t.Errorf("an unlisted tool is granted %+v", g)
	}
	if c.Security.Deny[0] != "**/secrets/**" {
		t.Error(c.Security.Deny)
	}
	if c.Server.MaxInstanceMemory != 256<<20 {
		t.Errorf("server.max_instance_memory defaults to %s, want 256MiB", c.Server.MaxInstanceMemory)
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

// TestMemoryBackendFromEnv: the backend URL, which holds a password, may
// come from the environment; a state key is accepted as hex or base64, and
// neither is echoed in an error.
func TestMemoryBackendFromEnv(t *testing.T) {
	t.Setenv("WARDEN_MEMORY_BACKEND", "postgres://warden:pw@db:5432/warden")
	t.Setenv("WARDEN_SERVER_STATE_KEY", strings.Repeat("ab", 32))
	c, err := Load(writeConfig(t, "memory: {postgres: {max_conns: 3}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Memory.Backend != "postgres://warden:pw@db:5432/warden" || c.Memory.Postgres.MaxConns != 3 || c.Memory.Postgres.QueryTimeout != 5*time.Second {
		t.Errorf("memory = %+v", c.Memory)
	}
	if key, err := c.Server.StateKeyBytes(); len(key) != 32 || key[0] != 0xab || err != nil {
		t.Errorf("state key = %x, %v", key, err)
	}
	t.Setenv("WARDEN_MEMORY_BACKEND", "redis://:pw@cache")
	if _, err := Load(""); err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("bad backend from env: %v", err)
	}
}

// TestInvalidShowsNoSecret: a refused value that may hold a credential
// (a password in the memory backend's URL, user:password@ in the tracing
// collector's, a key) is named by its key, never echoed, whether it came
// from the file or a WARDEN_* variable.
func TestInvalidShowsNoSecret(t *testing.T) {
	const secret = "hunter2hunter2"
	for _, c := range []struct{ body, env, value, want string }{
		// A / in the password ends the userinfo where pgx reads it: the rest
		// would be the database name its errors show.
		{body: "memory: {backend: \"postgres://u:12/" + secret + "@db/x\"}", want: "memory.backend: the postgres:// URL has an @ outside its user:password@ part"},
		{env: "WARDEN_MEMORY_BACKEND", value: "postgres://u:" + secret + "@a@db/x", want: "memory.backend: the postgres:// URL has an @ outside"},
		{env: "WARDEN_MEMORY_BACKEND", value: "host=db password=" + secret, want: `memory.backend: must be "file" or a postgres:// URL`},
		{body: "server: {tracing: {endpoint: \"grpc://u:" + secret + "@collector:4317\"}}", want: `server.tracing.endpoint: must be an http:// or https:// URL such as http://127.0.0.1:4318, got "grpc://collector:4317"`},
		{env: "WARDEN_SERVER_TRACING_ENDPOINT", value: "otlp://" + secret + "@collector", want: "server.tracing.endpoint: must be an http:// or https:// URL"},
		{env: "WARDEN_SERVER_STATE_KEY", value: secret + "!", want: "server.state_key: must be hex or base64"},
		// Host entries: a net grant, a redirect host.
		{body: "tools: {grants: {x: {net: [\"ftp://u:" + secret + "@api.example.com\"]}}}", want: `tools.grants.x.net: net grant "ftp://api.example.com" (shown without what precedes the @)`},
		{body: "tools: {fetch: {redirect_hosts: [\"u:" + secret + "@cdn.example.com\"]}}", want: `tools.fetch.redirect_hosts: "cdn.example.com" (shown without what precedes the @) is not a host name`},
		// A URL where a grant value goes: only net takes one.
		{body: "tools: {grants: {x: {env: [\"https://u:" + secret + "@x\"]}}}", want: `tools.grants.x.env: "https://x" (shown without what precedes the @) is not a key`},
		{body: "tools: {grants: {x: {lsp: [\"https://u:" + secret + "@x\"]}}}", want: `tools.grants.x.lsp: no language "https://x" (shown without what precedes the @) in lsp.languages`},
		{body: "tools: {grants: {x: {memory: \"https://u:" + secret + "@x\"}}}", want: `tools.grants.x.memory: must be read or read-write, got "https://x" (shown without`},
		{body: "tools: {grants: {x: {memory_topics: [\"u:" + secret + "@x\"]}}}", want: `tools.grants.x.memory_topics: "x" (shown without what precedes the @) is not a memory.topics value`},
		{body: "tools: {grants: {x: {client: [\"tok/" + secret + "@x\"]}}}", want: `tools.grants.x.client: unknown client feature "… (not shown: it has an @ after the host, so it may carry credentials)" (known: elicit, sample, roots) (the value is shown without what precedes the @)`},
		{body: "tools: {grants: {x: {fs: {read: [\"https://" + secret + "@x/y\"]}}}}", want: `tools.grants.x.fs: path "https://x/y" (shown without what precedes the @) names root "https"`},
		// KEY=VALUE where an env grant names a key.
		{body: "tools: {grants: {x: {env: [\"GITHUB_TOKEN=" + secret + "\"]}}}", want: `tools.grants.x.env: "GITHUB_TOKEN=…" is not a key: name the key alone`},
		// YAML's parser quotes an alias's name and a scalar its tag refuses.
		{body: "server:\n  token: *" + secret, want: "yaml: unknown anchor (its name is not shown; an unquoted value starting with * is an alias: quote it) referenced"},
		{body: "server:\n  token: &" + secret + " [*" + secret + "]", want: "yaml: anchor (its name is not shown; an unquoted value starting with * is an alias: quote it) value contains itself"},
		{body: "server:\n  token: !!int \"" + secret + "`\\n`\"", want: "yaml: cannot decode !!str (a value, not shown) as a !!int"},
	} {
		if c.env != "" {
			t.Setenv(c.env, c.value)
		}
		path := writeConfig(t, c.body+"\n")
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), secret) {
			t.Errorf("%s%s: %v\n want it to contain %q and not the secret", c.body, c.env, err, c.want)
		}
		if c.env != "" {
			os.Unsetenv(c.env)
		}
	}
}

// TestYAMLErrorsShowNoValue: the other readers of config.yaml (Sniff, for
// a config.yaml found in the working folder; EditFile, for warden grant and
// a prompt's "allow always") show a parse error without the value either,
// and EditFile leaves the file as it was.
func TestYAMLErrorsShowNoValue(t *testing.T) {
	const secret = "hunter2hunter2"
	body := "server:\n  token: *" + secret + "\n"
	path := writeConfig(t, body)
	if _, _, err := Sniff(path); err == nil || !strings.Contains(err.Error(), "unknown anchor") || strings.Contains(err.Error(), secret) {
		t.Errorf("Sniff: %v", err)
	}
	_, err := EditFile(path, func(d *Document) error {
		return d.Grant("echo", GrantChange{Key: "net", Values: []string{"api.example.com"}})
	})
	if err == nil || !strings.Contains(err.Error(), "unknown anchor") || strings.Contains(err.Error(), secret) {
		t.Errorf("EditFile: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != body {
		t.Errorf("EditFile wrote:\n%s", b)
	}
}

func TestInvalid(t *testing.T) {
	cases := map[string]string{
		"tools: {defaults: {timeout: soon}}":                                 "timeout",
		"tools: {defaults: {memory: lots}}":                                  `:1: tools.defaults.memory: want a size like "128MiB", got "lots"`,
		"tools: {defaults: {isolation: sometimes}}":                          `tools.defaults: isolation: must be call, session or shared`,
		"tools: {limits: {jq: {memory: 5GiB}}}":                              "tools.limits.jq: memory: at most 4GiB",
		"tools: {grants: {x: {memory: all}}}":                                "tools.grants.x.memory: must be read or read-write",
		"tools: {grants: {x: {lsp: [cobol]}}}":                               `tools.grants.x.lsp: no language "cobol"`,
		"tools: {grants: {x: {fs: {read: [\"docs:a\"]}}}}":                   `names root "docs"`,
		"tools: {pins: {echo: abc}}":                                         "tools.pins.echo: must be a lowercase hex sha256",
		"tools: {tiering: sometimes}":                                        `:1: tools.tiering: must be auto or off, got "sometimes"`,
		"server: {page_size: 0}":                                             "server.page_size: must be at least 1",
		"server: {max_instance_memory: 64KiB}":                               "server.max_instance_memory: must be between 1MiB and 1TiB, got 64 KiB",
		"env: {values: {K: {value: a, from_env: B}}}":                        "env.values.k: set exactly one of value or from_env",
		"tools: {grants: {x: {config: {api-key: {value: a, from_env: B}}}}}": "tools.grants.x.config.api-key: set exactly one of value or from_env",
		"tools: {grants: {x: {config: {k: {from_env: \"A=B\"}}}}}":           "tools.grants.x.config.k.from_env: is not a variable name",
		"log: {level: chatty}":                                               "log.level",
		"tools: {dirr: x}":                                                   "dirr",
		"tools: [1, 2":                                                       "config",
		"lsp: {languages: {rust: {args: [x]}}}":                              "lsp.languages.rust.command: must not be empty",
		"server: {state_key: c2hvcnQ=}":                                      "server.state_key: must be at least 32 bytes once decoded, got 5",
		"server: {state_key: \"not a key!\"}":                                "server.state_key: must be hex or base64",
		"memory: {backend: \"mysql://u:pw@h/db\"}":                           `memory.backend: must be "file" or a postgres:// URL`,
		"memory: {postgres: {max_conns: 0}}":                                 "memory.postgres.max_conns: must be between 1 and 1000, got 0",
		"memory: {postgres: {query_timeout: 0s}}":                            "memory.postgres.query_timeout: must be positive",
		"server: {rate_limit: {per_client: {rate: \"10\"}}}":                 `server.rate_limit.per_client.rate: "10" is not a rate: write calls per unit, such as 10/s`,
		"server: {rate_limit: {per_tool: {rate: 5/s, burst: -1}}}":           "server.rate_limit.per_tool.burst: must not be negative",
		"tools: {limits: {jq: {rate: 5/day}}}":                               `tools.limits.jq.rate: "5/day" is not a rate: the unit "day" is not s, m or h`,
		"tools: {limits: {jq: {max_in_flight: -1}}}":                         "tools.limits.jq.max_in_flight: must not be negative",
		"tools: {defaults: {max_in_flight: 2}}":                              "tools.defaults: max_in_flight, rate and burst apply to one tool",
		"server: {max_queued: -1}":                                           "server.max_queued: must not be negative",
		// WARDEN_* is warden's own configuration: never a tool's.
		"tools: {grants: {x: {env: [WARDEN_SERVER_TOKEN]}}}":                          `tools.grants.x.env: "WARDEN_SERVER_TOKEN" is warden's own configuration (WARDEN_* keys set warden's config, e.g. WARDEN_SERVER_TOKEN); no grant can give one to a tool`,
		"tools: {grants: {x: {env: [warden_Server_State_Key]}}}":                      `tools.grants.x.env: "warden_Server_State_Key" is warden's own configuration`,
		"env: {values: {WARDEN_X: {value: a}}}":                                       "env.values.warden_x: a WARDEN_* key is warden's own configuration and can never be granted to a tool; name it otherwise",
		"env: {values: {TOKEN: {from_env: WARDEN_SERVER_TOKEN}}}":                     "env.values.token.from_env: WARDEN_SERVER_TOKEN is one of warden's own server.* settings (viper reads WARDEN_<KEY PATH>); a tool is never given warden's configuration",
		"env: {values: {DSN: {from_env: warden_memory_backend}}}":                     "env.values.dsn.from_env: warden_memory_backend is one of warden's own memory.* settings",
		"tools: {grants: {x: {config: {k: {from_env: WARDEN_SERVER_OAUTH_ISSUER}}}}}": "tools.grants.x.config.k.from_env: WARDEN_SERVER_OAUTH_ISSUER is one of warden's own server.* settings",
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

// TestFromEnvOutsideWardensSettings: a from_env naming a WARDEN_ variable
// that sets no config key (a test's) stays usable.
func TestFromEnvOutsideWardensSettings(t *testing.T) {
	path := writeConfig(t, "env: {values: {K: {from_env: WARDEN_TEST_KEY}}}\ntools: {grants: {x: {config: {k: {from_env: WARDENISH}}}}}")
	if _, err := Load(path); err != nil {
		t.Fatal(err)
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
	if g := granted(live.Current(), "echo"); len(g.LSP) != 1 {
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
		if g := granted(next, "echo"); len(g.Net) != 1 || len(g.LSP) != 0 {
			t.Fatalf("reloaded grants %+v", g)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no reload after the file changed")
	}
	if g := granted(live.Current(), "echo"); len(g.Net) != 1 {
		t.Fatalf("Current() = %+v", g)
	}
}

// granted is what the tool named name gets while the module of the same
// name serves it (the common one-tool module).
func granted(c *Config, name string) tool.Capabilities {
	g, _ := c.Grants(name, name)
	return g
}

// TestGrantsBoundToModule: a grant entry applies only while its tool is
// served by the module it is bound to: the module field, compared exactly,
// or without one the module named like the tool. Any other module serving a
// tool of that name (in any case) gets nothing, and an error naming the
// config line and both modules.
func TestGrantsBoundToModule(t *testing.T) {
	c, err := Load(writeConfig(t, `
env:
  values: {SECRET: {value: s3cret}}
tools:
  grants:
    echo: {env: [SECRET]}
    reader: {fs: {read: [src]}}
    Upper: {env: [SECRET]}
    symbols: {module: Navigator, fs: {read: [src]}, lsp: [go]}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c2 := range []struct {
		tool, module string
		want         bool   // granted
		err          string // in the error when not
	}{
		{"echo", "echo", true, ""},
		{"echo", "aaa-evil", false, `tools.grants.echo is bound to module echo (no module field: the module named like the tool); tool "echo" is served by module aaa-evil`},
		{"ECHO", "aaa-evil", false, "tools.grants.echo is bound to module echo"},
		{"READER", "shouty", false, `tools.grants.reader is bound to module reader (no module field: the module named like the tool); tool "READER" is served by module shouty`},
		{"READER", "reader", true, ""}, // the bound module itself, spelling its tool otherwise
		{"reader", "Reader", false, "bound to module reader"},
		{"Upper", "upper", true, ""}, // keys are folded: the default module is the lower-case key
		{"Upper", "Upper", false, "bound to module upper (no module field: the module named like the tool); tool \"Upper\" is served by module Upper, " +
			"so that entry grants it nothing (if you reviewed Upper and want it to have the grant: " +
			"warden grant upper --module Upper ..., or warden migrate for every entry without a module field)"},
		{"symbols", "Navigator", true, ""},
		{"symbols", "navigator", false, "tools.grants.symbols is bound to module Navigator (its module field)"},
		{"symbols", "symbols", false, "warden grant symbols --module symbols"},
		{"unlisted", "unlisted", false, ""},
	} {
		g, err := c.Grants(c2.tool, c2.module)
		if c2.want != !g.IsZero() {
			t.Errorf("%s served by %s: granted %+v", c2.tool, c2.module, g)
		}
		var ge *GrantElsewhereError
		switch {
		case c2.err == "" && err != nil:
			t.Errorf("%s served by %s: %v", c2.tool, c2.module, err)
		case c2.err != "" && (!errors.As(err, &ge) || !strings.Contains(err.Error(), c2.err)):
			t.Errorf("%s served by %s: error %v, want %q", c2.tool, c2.module, err, c2.err)
		}
	}
	if m, explicit, ok := c.GrantModule("SYMBOLS"); m != "Navigator" || !explicit || !ok {
		t.Errorf("GrantModule(SYMBOLS) = %q %v %v", m, explicit, ok)
	}
	if m, explicit, ok := c.GrantModule("echo"); m != "echo" || explicit || !ok {
		t.Errorf("GrantModule(echo) = %q %v %v", m, explicit, ok)
	}
	if _, _, ok := c.GrantModule("nope"); ok {
		t.Error("GrantModule of a tool without an entry")
	}
}

// TestModuleAndToolNamesInConfig: names that become config keys (grant
// entries, pins, limits) and the grants' module field follow the tool name
// rule; a bad one is refused with its key path.
func TestModuleAndToolNamesInConfig(t *testing.T) {
	sum := strings.Repeat("a", 64)
	for body, want := range map[string]string{
		`tools: {grants: {echo: {module: "../evil"}}}`: `tools.grants.echo.module: "../evil" is not a module name`,
		`tools: {grants: {echo: {module: ".."}}}`:      `tools.grants.echo.module: ".." is not a module name`,
		`tools: {grants: {echo: {module: "a b"}}}`:     `tools.grants.echo.module: "a b" is not a module name`,
		`tools: {grants: {"..": {memory: read}}}`:      `tools.grants...: ".." is not a tool name`,
		`tools: {grants: {"-x": {memory: read}}}`:      `tools.grants.-x: "-x" is not a tool name`,
		`tools: {pins: {"..": ` + sum + `}}`:           `tools.pins...: ".." is not a module name`,
		`tools: {limits: {".x": {timeout: 1s}}}`:       `tools.limits..x: ".x" is not a module or tool name`,
	} {
		_, err := Load(writeConfig(t, body+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tool.NameRule) {
			t.Errorf("%s: error %v, want %q and the rule", body, err, want)
		}
	}
	if _, err := Load(writeConfig(t, `tools: {grants: {echo: {module: echo-v2.1}}, pins: {echo-v2.1: `+sum+`}}`+"\n")); err != nil {
		t.Errorf("valid names refused: %v", err)
	}
}

// TestToolConfig: a tool's own config belongs to the module its grant is
// bound to, keyed in lower case, and is nil for anyone else.
func TestToolConfig(t *testing.T) {
	c, err := Load(writeConfig(t, "tools:\n  grants:\n    brave: {config: {API-Key: {from_env: BRAVE_KEY}, base-url: {value: \"https://x\"}}}\n    other: {module: brave}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := c.ToolConfig("Brave", "brave")
	if len(got) != 2 || got["api-key"].FromEnv != "BRAVE_KEY" || got["base-url"].Value != "https://x" {
		t.Fatalf("ToolConfig = %#v", got)
	}
	if got := c.ToolConfig("brave", "impostor"); got != nil {
		t.Fatalf("another module got %#v", got)
	}
	if got := c.ToolConfig("other", "brave"); got != nil {
		t.Fatalf("a tool without config got %#v", got)
	}
}

// TestReloadRefusesBlankFile: a config file that becomes empty while warden
// runs (an editor's truncating save) is refused, naming the file and how to
// clear the config on purpose; the previous grants and limits stay. `{}`
// clears it, and a file blank from the start loads.
func TestReloadRefusesBlankFile(t *testing.T) {
	path := writeConfig(t, "tools: {grants: {echo: {lsp: [go]}}, limits: {echo: {timeout: 1s}}}\n")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	live := NewLive(c, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	for _, body := range []string{"", "  \n\n   \n", "# everything commented out\n# tools: {}\n", "---\n"} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		err := live.Reload()
		want := "config " + path + ": the file became empty (nothing but whitespace or comments), which would drop every grant and reset every limit to its default; refused as a truncated save. To clear the config on purpose, write {} into the file (or set the keys explicitly)"
		if err == nil || err.Error() != want {
			t.Fatalf("Reload of %q:\n got %v\nwant %s", body, err, want)
		}
		if g := granted(live.Current(), "echo"); len(g.LSP) != 1 {
			t.Fatalf("%q dropped the grant: %+v", body, g)
		}
		if got := live.Current().ToolTimeout("echo"); got != time.Second {
			t.Fatalf("%q reset the echo timeout to %s", body, got)
		}
	}
	// {} clears the config deliberately.
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := live.Reload(); err != nil {
		t.Fatalf("Reload of {}: %v", err)
	}
	if g := granted(live.Current(), "echo"); len(g.LSP) != 0 {
		t.Fatalf("{} kept the grant: %+v", g)
	}
	// From {} to an empty file changes nothing: accepted.
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := live.Reload(); err != nil {
		t.Fatalf("Reload of an empty file after {}: %v", err)
	}
	// A file empty from the start loads, and stays reloadable.
	blank := writeConfig(t, "# nothing yet\n")
	c, err = Load(blank)
	if err != nil {
		t.Fatalf("Load of a blank file: %v", err)
	}
	live = NewLive(c, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err := live.Reload(); err != nil {
		t.Fatalf("Reload of a file blank from the start: %v", err)
	}
}

// TestReloadNamesStartOnlyKeys: a reload that changes keys a running server
// reads only at start (tools.dir, server.* but server.rate_limit) is applied
// and logged once, naming exactly those keys; changing only the rate limit
// or a tool's limits logs nothing.
func TestReloadNamesStartOnlyKeys(t *testing.T) {
	path := writeConfig(t, "server: {max_in_flight: 8}\ntools: {limits: {echo: {timeout: 1s}}}\n")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	live := NewLive(c, slog.New(slog.NewTextHandler(&logs, nil)), nil)
	reload := func(body string) string {
		t.Helper()
		logs.Reset()
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := live.Reload(); err != nil {
			t.Fatalf("Reload: %v", err)
		}
		return logs.String()
	}
	out := reload("server: {max_in_flight: 8, rate_limit: {per_client: {rate: 5/s}}}\ntools: {limits: {echo: {timeout: 2s}}}\n")
	if out != "" {
		t.Fatalf("a rate limit and a tool limit changed, yet:\n%s", out)
	}
	if got := live.Current().ToolTimeout("echo"); got != 2*time.Second {
		t.Fatalf("the tool limit was not applied: %s", got)
	}
	out = reload("server: {max_in_flight: 16, queue_wait: 3s, rate_limit: {per_client: {rate: 5/s}}}\ntools: {dir: " + t.TempDir() + ", limits: {echo: {timeout: 2s}}}\n")
	if n := strings.Count(out, "config change not applied until warden serve restarts"); n != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "keys=\"[tools.dir server.max_in_flight server.queue_wait]\"") {
		t.Fatalf("the warning does not name exactly the changed start-only keys:\n%s", out)
	}
}

// TestWardenKeyRefusalNamesTheLine: a WARDEN_* env key in a grant or in
// env.values is refused naming its key path and the line of its key.
func TestWardenKeyRefusalNamesTheLine(t *testing.T) {
	path := writeConfig(t, "# tools\ntools:\n  grants:\n    x:\n      env:\n        - WARDEN_SERVER_TOKEN\nenv:\n  values:\n    Warden_X: {value: a}\n")
	_, err := Load(path)
	for _, want := range []string{
		path + `:5: tools.grants.x.env: "WARDEN_SERVER_TOKEN" is warden's own configuration (WARDEN_* keys set warden's config, e.g. WARDEN_SERVER_TOKEN); no grant can give one to a tool`,
		path + `:9: env.values.warden_x: a WARDEN_* key is warden's own configuration and can never be granted to a tool; name it otherwise`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nwant it to contain %q", err, want)
		}
	}
}
