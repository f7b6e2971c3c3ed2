package serve

import (
	"bytes"
	"context"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// secret is the credential the tests below hide in settings; it must
// appear in no byte warden writes.
const secret = "Hunter2Secret9f3a"

// TestCredentialsNotShownAtStart: settings holding a credential that warden
// refuses or fails to use at start (a value YAML's parser would quote; a
// user:password@ in a net grant, a redirect host, a signature pattern or
// server.tracing.endpoint; KEY=VALUE in an env grant; a password in
// memory.backend, in the file or WARDEN_MEMORY_BACKEND, including one with
// a / that pgx would read as the database name, which its connection error
// prints) make `warden serve`, `warden tools` and, where given, `warden
// grant` fail naming the key, and the secret is in no byte of their stdout
// or stderr, nor in any file they leave behind; config.yaml is unchanged.
func TestCredentialsNotShownAtStart(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, yaml, env, want string
		replace               [2]string // in the config: old, new
		grant                 []string  // a warden grant, which edits the file, refused too
	}{
		// An unquoted value starting with * is a YAML alias: the parser's
		// error would name it.
		{name: "token starting with a star",
			yaml:  "server:\n  token: *" + secret + "\n",
			want:  "yaml: unknown anchor (its name is not shown; an unquoted value starting with * is an alias: quote it) referenced",
			grant: []string{"grant", "echo", "net=api.example.com"}},
		// A host entry with a user:password@ (net grants, redirect hosts),
		// in the file and on warden grant's command line.
		{name: "net grant with a password",
			replace: [2]string{"    echo: {}\n", "    echo: {net: [\"https://u:" + secret + "@api.example.com\"]}\n"},
			want:    `tools.grants.echo.net: net grant "https://api.example.com" (shown without what precedes the @)`,
			grant:   []string{"grant", "echo", "net=https://" + secret + "@api.example.com"}},
		// KEY=VALUE where an env grant names a key: once accepted, and
		// then shown by warden tools.
		{name: "env grant with its value",
			replace: [2]string{"    echo: {}\n", "    echo: {env: [\"GITHUB_TOKEN=" + secret + "\"]}\n"},
			want:    `tools.grants.echo.env: "GITHUB_TOKEN=…" is not a key: name the key alone`,
			grant:   []string{"grant", "echo", "env=GITHUB_TOKEN=" + secret}},
		{name: "redirect host with a password",
			replace: [2]string{"tools:\n", "tools:\n  fetch: {redirect_hosts: [\"u:" + secret + "@cdn.example.com\"]}\n"},
			want:    `tools.fetch.redirect_hosts: "cdn.example.com" (shown without what precedes the @) is not a host name`},
		{name: "signature pattern with a password",
			yaml: "security:\n  signatures:\n    \"https://u:" + secret + "@host/*\": {mode: \"off\"}\n",
			want: `security.signatures: invalid signature policy: source pattern (not shown: it has an @, so it may carry credentials)`},
		{name: "state key under a wrong tag",
			yaml: "server:\n  state_key: !!int " + secret + "\n",
			want: "yaml: cannot decode !!str (a value, not shown) as a !!int"},
		{name: "backend password with a slash",
			yaml: "memory:\n  backend: postgres://u:12/" + secret + "@127.0.0.1:1/db\n",
			want: "memory.backend: the postgres:// URL has an @ outside its user:password@ part"},
		{name: "backend password with a second @",
			env:  "WARDEN_MEMORY_BACKEND=postgres://u:p@" + secret + "@127.0.0.1:1/db",
			want: "memory.backend: the postgres:// URL has an @ outside its user:password@ part"},
		{name: "backend password with a ? unreachable",
			env:  "WARDEN_MEMORY_BACKEND=postgres://u:12?" + secret + "@127.0.0.1:1/db?connect_timeout=5",
			want: "memory: postgres://u@127.0.0.1:1/db: migrate the schema"},
		{name: "backend in keyword form",
			env:  "WARDEN_MEMORY_BACKEND=host=127.0.0.1 password=" + secret,
			want: `memory.backend: must be "file" or a postgres:// URL`},
		{name: "tracing endpoint with userinfo",
			env:  "WARDEN_SERVER_TRACING_ENDPOINT=grpc://u:" + secret + "@127.0.0.1:4317",
			want: `server.tracing.endpoint: must be an http:// or https:// URL such as http://127.0.0.1:4318, got "grpc://127.0.0.1:4317"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, "", "echo")
			if c.yaml != "" {
				appendConfig(t, e, c.yaml)
			}
			if c.replace[0] != "" {
				b, err := os.ReadFile(e.config)
				if err != nil || !bytes.Contains(b, []byte(c.replace[0])) {
					t.Fatalf("config %s has no %q (%v)", e.config, c.replace[0], err)
				}
				if err := os.WriteFile(e.config, bytes.Replace(b, []byte(c.replace[0]), []byte(c.replace[1]), 1), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			written, err := os.ReadFile(e.config)
			if err != nil {
				t.Fatal(err)
			}
			commands := [][]string{{"serve"}, {"tools"}}
			if c.grant != nil {
				commands = append(commands, c.grant)
			}
			for _, args := range commands {
				cmd := exec.Command(built.warden, append(args, "--config", e.config)...)
				cmd.Env = childEnv()
				if c.env != "" {
					cmd.Env = append(cmd.Env, c.env)
				}
				var stdout, stderr bytes.Buffer
				cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), &stdout, &stderr
				err := cmd.Run()
				if err == nil {
					t.Fatalf("warden %s started\nstderr: %s", args[0], stderr.String())
				}
				if !strings.Contains(stderr.String(), c.want) {
					t.Errorf("warden %s stderr does not say %q:\n%s", args[0], c.want, stderr.String())
				}
				noSecret(t, "warden "+args[0]+" stdout", stdout.String())
				noSecret(t, "warden "+args[0]+" stderr", stderr.String())
			}
			if b, _ := os.ReadFile(e.config); !bytes.Equal(b, written) {
				t.Errorf("config.yaml changed:\n%s", b)
			}
			// What start-up wrote (a .warden directory, say) holds no secret;
			// only config.yaml, the person's own file, may.
			for path, data := range filesOf(t, e.dir) {
				if path != e.config {
					noSecret(t, path, data)
				}
			}
		})
	}
}

// TestCredentialsNotShownByGrant: a credential typed into warden grant's
// arguments by mistake (a URL with user:password@ where KEY=VALUE goes, a
// grant of any key with one, an env grant with its value) is refused without
// being shown, and config.yaml is left as it was.
func TestCredentialsNotShownByGrant(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo")
	written, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	for arg, want := range map[string]string{
		"https://u:" + secret + "@api.example.com":     `unknown grant key "https://api.example.com" (shown without what precedes the @)`,
		"net=https://u:" + secret + "@api.example.com": `net grant "https://api.example.com" (shown without what precedes the @)`,
		"net=" + secret + "@api.example.com private":   `net grant "(an unparsable URL, not shown as it may carry credentials)"`,
		"env=GITHUB_TOKEN=" + secret:                   `"GITHUB_TOKEN=…" is not a key: name the key alone`,
		// A URL typed as the value of a key other than net.
		"env=https://u:" + secret + "@h":           `"https://h" (shown without what precedes the @) is not a key`,
		"lsp=https://u:" + secret + "@h":           `"https://h" is not a language name`,
		"memory.topics=https://u:" + secret + "@h": `topic "https://h"`,
		"client=u:" + secret + "@h":                `unknown client feature "h"`,
		"fs.read=https://u:" + secret + "@h/x":     `path "https://h/x" (shown without what precedes the @) names root "https"`,
	} {
		cmd := exec.Command(built.warden, "grant", "echo", arg, "--config", e.config)
		cmd.Env = childEnv()
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err == nil {
			t.Errorf("warden grant echo %q succeeded:\n%s", arg, stdout.String())
		}
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("warden grant: stderr does not say %q:\n%s", want, stderr.String())
		}
		noSecret(t, "warden grant stdout", stdout.String())
		noSecret(t, "warden grant stderr", stderr.String())
		if b, _ := os.ReadFile(e.config); !bytes.Equal(b, written) {
			t.Fatalf("warden grant echo %q changed config.yaml:\n%s", arg, b)
		}
	}
}

// TestBearerTokenNotShown: the static token (--token) and the wrong
// tokens clients send are in no byte of warden's stderr at debug level,
// the audit log, or any HTTP answer (401s, /healthz, /metrics, calls),
// whatever the Authorization header holds.
func TestBearerTokenNotShown(t *testing.T) {
	t.Parallel()
	const token = "Tok" + secret
	e := newEnv(t, "", "echo")
	audit := filepath.Join(e.dir, "audit.log")
	e.setLogLevel(t, "debug\n  audit: "+audit+"\n  audit_arguments: true")
	appendConfig(t, e, "server:\n  metrics: true\n")
	s := startHTTP(t, e, "--token", token)
	var answers []string
	send := func(method, path, authorization string) int {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, err := http.NewRequest(method, "http://"+s.addr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "server/discover")
		req.Header["Authorization"] = []string{authorization}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var head strings.Builder
		resp.Header.Write(&head)
		answers = append(answers, head.String()+readAll(resp.Body))
		return resp.StatusCode
	}
	for _, auth := range []string{
		"Bearer wrong" + secret, "Bearer " + token + "x", "Basic " + secret, secret,
		"Bearer " + secret + "\t", "bearer  " + secret + " extra",
	} {
		if got := send("POST", "/mcp", auth); got != http.StatusUnauthorized {
			t.Errorf("POST /mcp with Authorization %q: %d, want 401", auth, got)
		}
	}
	if got := send("POST", "/mcp", "Bearer "+token); got != http.StatusOK {
		t.Errorf("POST /mcp with the token: %d, want 200", got)
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		send("GET", path, "Bearer "+token)
	}
	cs := s.connect(t, "", nil, &http.Client{Transport: bearer{token}})
	wantEcho(t, cs, "authorized")
	eventually(t, "the call in the audit log", func() bool {
		b, _ := os.ReadFile(audit)
		return strings.Contains(string(b), `"tool":"echo"`)
	})

	noSecret(t, "stderr", s.stderr.String())
	for _, a := range answers {
		noSecret(t, "an HTTP answer", a)
	}
	for path, data := range filesOf(t, e.dir) {
		if path != e.config {
			noSecret(t, path, data)
		}
	}
}

// TestCredentialsNotShownWhileServing: a server whose memory backend URL
// holds a password (PostgreSQL, trusting every connection, ignores it)
// serves memory calls at debug level with an audit log; a reload bringing
// a tracing endpoint with user:password@ is refused, and one naming
// another backend is kept for the next start, each with a line on stderr.
// The password is in no byte of stderr, the audit log, any reply, or any
// file warden wrote; the session still serves after both reloads.
func TestCredentialsNotShownWhileServing(t *testing.T) {
	dbURL := pg.DB(t)
	t.Parallel()
	withPassword := strings.Replace(dbURL, "postgres://postgres@", "postgres://postgres:"+secret+"@", 1)
	if withPassword == dbURL {
		t.Fatalf("pgtest's URL %s has no postgres@ to add a password to", dbURL)
	}
	e := newEnv(t, "", "hostcalls")
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(e.dir, "audit.log")
	base := strings.Replace(string(cfg), "    hostcalls: {}\n", "    hostcalls: {memory: read-write}\n", 1)
	base = strings.Replace(base, "log:\n  level: info\n", "log:\n  level: debug\n  audit: "+audit+"\n  audit_arguments: true\n", 1)
	base += "security:\n  prompts: off\n"
	write := func(extra string) {
		t.Helper()
		if err := os.WriteFile(e.config, []byte(base+extra), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("memory:\n  backend: " + withPassword + "\n")

	cs, stderr := stdioServer(t, e, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var replies []string
	memory := func(req map[string]any) {
		t.Helper()
		res, terr, err := memoryCall(ctx, cs, req)
		if err != nil || terr != nil {
			t.Fatalf("memory %v: %v %v", req, err, terr)
		}
		replies = append(replies, string(res))
	}
	memory(map[string]any{"op": "set", "topic": "notes", "value": "kept in postgres"})
	memory(map[string]any{"op": "get", "topic": "notes"})
	if !strings.Contains(replies[1], "kept in postgres") {
		t.Fatalf("get after set: %s", replies[1])
	}

	// A collector URL with a password that config refuses.
	write("memory:\n  backend: " + withPassword + "\nserver:\n  tracing:\n    endpoint: otlp://u:" + secret + "@127.0.0.1:4317\n")
	eventually(t, "the refused reload on stderr", func() bool {
		return len(stderr.lines("config change refused", "server.tracing.endpoint")) > 0
	})
	// A token that YAML reads as an alias.
	write("memory:\n  backend: " + withPassword + "\nserver:\n  token: *" + secret + "\n")
	eventually(t, "the refused reload on stderr", func() bool {
		return len(stderr.lines("config change refused", "unknown anchor")) > 0
	})
	// Another backend, with a password too: read at start, so kept.
	other := strings.Replace(withPassword, "@127.0.0.1:", "@localhost:", 1)
	write("memory:\n  backend: " + other + "\n")
	eventually(t, "the kept backend on stderr", func() bool {
		return len(stderr.lines("memory.backend changed")) > 0
	})
	if got := stderr.lines("memory.backend changed"); !strings.Contains(got[0], "running=postgres://postgres@127.0.0.1:") ||
		!strings.Contains(got[0], "configured=postgres://postgres@localhost:") {
		t.Errorf("the warning does not name both backends by user, host and database: %s", got[0])
	}
	memory(map[string]any{"op": "get", "topic": "notes"})

	noSecret(t, "stderr", stderr.String())
	for _, r := range replies {
		noSecret(t, "a memory reply", r)
	}
	for path, data := range filesOf(t, e.dir) {
		if path != e.config {
			noSecret(t, path, data)
		}
	}
	if data, err := os.ReadFile(audit); err != nil || !strings.Contains(string(data), `"tool":"hostcalls"`) {
		t.Errorf("the audit log does not record the calls (%v):\n%s", err, data)
	}
}

// noSecret fails t if s holds the secret, in any case or escaped form
// termsafe could give it (it has no character termsafe escapes).
func noSecret(t *testing.T, where, s string) {
	t.Helper()
	if strings.Contains(strings.ToLower(s), strings.ToLower(secret)) {
		t.Errorf("%s shows the secret:\n%s", where, s)
	}
}

// filesOf reads every regular file under dir (the test's own, small).
func filesOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		files[path] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
