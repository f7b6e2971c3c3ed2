package main

import (
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
)

var update = flag.Bool("update", false, "rewrite testdata/help/*.txt from the binary's help")

// escapeRE matches the visible escapes termsafe writes (\x0a, \u202e,
// \U000e0001): none may appear in text warden wrote itself.
var escapeRE = regexp.MustCompile(`\\(x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})`)

// TestHelpGolden: `warden --help` and every command's --help, as the real
// binary prints them, are testdata/help/*.txt (go test -run TestHelpGolden
// -update rewrites them after a deliberate change). The help reads the
// same in every folder: it shows no config path found there.
func TestHelpGolden(t *testing.T) {
	commands := []string{""}
	for _, c := range newRoot().Commands() {
		commands = append(commands, c.Name())
	}
	commands = append(commands, "completion", "cache warm", "tasks list", "tasks show", "tasks cancel")
	dir := t.TempDir()
	for _, name := range commands {
		args := []string{"--help"}
		file := "warden.txt"
		if name != "" {
			args = append(strings.Fields(name), "--help")
			file = "warden-" + strings.ReplaceAll(name, " ", "-") + ".txt"
		}
		stdout, stderr, code := runIn(t, dir, nil, args...)
		if code != 0 || stderr != "" {
			t.Errorf("warden %v: exit %d, stderr %q", args, code, stderr)
			continue
		}
		golden := filepath.Join("testdata", "help", file)
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (go test ./cmd/warden -run TestHelpGolden -update writes it)", err)
		}
		if stdout != string(want) {
			t.Errorf("warden %s differs from %s (-update rewrites it):\n%s", strings.Join(args, " "), golden, stdout)
		}
	}
}

// TestHelpOffersWhatApplies: the global flags are offered (and accepted)
// only by commands that read a config, the developer flags of serve are
// not in its help, and --http's help names no default address of "config".
func TestHelpOffersWhatApplies(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"new", "version", "completion"} {
		out, _, _ := runIn(t, dir, nil, name, "--help")
		for _, flag := range []string{"--config", "--log-level", "--verbose", "Global Flags"} {
			if strings.Contains(out, flag) {
				t.Errorf("warden %s --help offers %s:\n%s", name, flag, out)
			}
		}
	}
	if _, stderr, code := runIn(t, dir, nil, "new", "-c", "config.yaml", "wc"); code != exitUsage || stderr != "warden: unknown shorthand flag: 'c' in -c\n" {
		t.Errorf("warden new -c: exit %d, stderr %q", code, stderr)
	}
	for _, name := range []string{"tools", "call", "inspect", "serve", "install", "sync", "update", "publish", "grant", "revoke", "dev", "mcp-config", "migrate", "tasks", "tasks list", "tasks show", "tasks cancel"} {
		out, _, _ := runIn(t, dir, nil, append(strings.Fields(name), "--help")...)
		if !strings.Contains(out, "  -c, --config string ") || !strings.Contains(out, "config file (default: $WARDEN_CONFIG, else config.yaml here or in the nearest parent folder)") {
			t.Errorf("warden %s --help lacks the one -c help:\n%s", name, out)
		}
	}
	out, _, _ := runIn(t, dir, nil, "serve", "--help")
	for _, hidden := range []string{"--cpuprofile", "--trace", `"config"`} {
		if strings.Contains(out, hidden) {
			t.Errorf("warden serve --help shows %s:\n%s", hidden, out)
		}
	}
	if !strings.Contains(out, "--http ADDR[=server.http]") {
		t.Errorf("warden serve --help: --http is not shown as ADDR with server.http when alone:\n%s", out)
	}
}

// TestCallWithoutArgumentsShowsUsage: a command that needs arguments,
// given none, prints its usage on stderr (nothing on stdout) and exits 2;
// one given too many still says what is wrong.
func TestCallWithoutArgumentsShowsUsage(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := runIn(t, dir, nil, "call")
	if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, "Usage:\n  warden call TOOL [ARGUMENTS_JSON] [flags]\n") || strings.Contains(stderr, "arg(s)") {
		t.Errorf("warden call: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	_, stderr, code = runIn(t, dir, nil, "call", "a", "{}", "extra")
	if code != exitUsage || stderr != "warden: accepts between 1 and 2 arg(s), received 3\n" {
		t.Errorf("warden call a {} extra: exit %d, stderr %q", code, stderr)
	}
}

// TestVersion: warden version and --version print the version, the
// commit, and the Go and wazero versions; -v is --verbose, not version.
func TestVersion(t *testing.T) {
	dir := t.TempDir()
	out, stderr, code := runIn(t, dir, nil, "version")
	if code != 0 || stderr != "" {
		t.Fatalf("warden version: exit %d, stderr %q", code, stderr)
	}
	re := regexp.MustCompile(`^warden \S+\ncommit: \S+( \(modified\))?\ndate:   \S+\ntarget: ` + runtime.GOOS + "/" + runtime.GOARCH + `( \(GOAMD64=v\d\))?\ngo:     go1\.\S+\nwazero: v\d+\.\d+\.\d+\S*\n$`)
	if !re.MatchString(out) {
		t.Errorf("warden version:\n%s", out)
	}
	flagOut, _, code := runIn(t, dir, nil, "--version")
	if code != 0 || flagOut != out {
		t.Errorf("warden --version (exit %d):\n%s\nwant what warden version prints:\n%s", code, flagOut, out)
	}
	if _, stderr, code := runIn(t, dir, nil, "-v", "version"); code != exitUsage || !strings.Contains(stderr, "unknown shorthand flag: 'v'") {
		t.Errorf("warden -v version: exit %d, stderr %q", code, stderr)
	}
}

// TestVersionText: the build info's module version, revision, commit
// time, modified flag, Go version and wazero version (or its replacement)
// are shown; a binary without build info says unknown; what a release
// build stamped (-X main.version, main.commit, main.date) wins over the
// build info.
func TestVersionText(t *testing.T) {
	if got := versionText(stamp{version: "dev"}, "linux/amd64", nil); got != "warden dev\ncommit: unknown\ndate:   unknown\ntarget: linux/amd64\ngo:     unknown\nwazero: unknown\n" {
		t.Errorf("without build info:\n%s", got)
	}
	info := &debug.BuildInfo{
		GoVersion: "go1.26.1",
		Main:      debug.Module{Path: "github.com/warden-run/warden", Version: "v1.2.3"},
		Deps: []*debug.Module{{Path: "golang.org/x/term", Version: "v0.1.0"},
			{Path: wazeroModule, Version: "v1.12.0", Replace: &debug.Module{Path: "../wazero", Version: ""}}},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-01T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"}, {Key: "GOAMD64", Value: "v3"}},
	}
	if got, want := versionText(stamp{version: "dev"}, "linux/amd64", info), "warden v1.2.3\ncommit: abc123 (modified)\ndate:   2026-11-01T10:00:00Z\ntarget: linux/amd64 (GOAMD64=v3)\ngo:     go1.26.1\nwazero: ../wazero\n"; got != want {
		t.Errorf("versionText:\n%s\nwant:\n%s", got, want)
	}
	released := stamp{version: "1.4.0", commit: "0123456789abcdef", date: "2026-11-20T08:00:00Z"}
	if got, want := versionText(released, "windows/arm64", info), "warden 1.4.0\ncommit: 0123456789abcdef\ndate:   2026-11-20T08:00:00Z\ntarget: windows/arm64 (GOAMD64=v3)\ngo:     go1.26.1\nwazero: ../wazero\n"; got != want {
		t.Errorf("a release's stamp:\n%s\nwant:\n%s", got, want)
	}
}

// TestVersionStamped: a binary built as .goreleaser.yaml builds it
// (-trimpath, -ldflags -X main.version/commit/date, CGO_ENABLED=0) prints
// the stamped fields and the target it was built for.
func TestVersionStamped(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "warden")
	build := exec.Command("go", "build", "-trimpath", "-o", bin,
		"-ldflags", "-s -w -X main.version=9.8.7 -X main.commit=feedface -X main.date=2026-11-20T08:00:00Z", ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^warden 9\.8\.7\ncommit: feedface\ndate:   2026-11-20T08:00:00Z\ntarget: ` + runtime.GOOS + "/" + runtime.GOARCH + `( \(GOAMD64=v\d\))?\ngo:     go1\.\S+\nwazero: v\d+\.\d+\.\d+\S*\n$`)
	if !re.Match(out) {
		t.Errorf("stamped warden version:\n%s", out)
	}
}

// TestLogLevel: serve logs at log.level; a one-shot command at warn, info
// with -v, but never below log.level; --log-level wins over both.
func TestLogLevel(t *testing.T) {
	for _, c := range []struct {
		g          globalFlags
		configured string
		want       slog.Level
	}{
		{globalFlags{keepLogs: true}, "info", slog.LevelInfo},
		{globalFlags{keepLogs: true, verbose: true}, "error", slog.LevelError},
		{globalFlags{}, "info", slog.LevelWarn},
		{globalFlags{}, "debug", slog.LevelWarn},
		{globalFlags{}, "error", slog.LevelError},
		{globalFlags{verbose: true}, "info", slog.LevelInfo},
		{globalFlags{verbose: true}, "error", slog.LevelError},
		{globalFlags{logLevel: "debug"}, "error", slog.LevelDebug},
		{globalFlags{logLevel: "debug", keepLogs: true}, "error", slog.LevelDebug},
	} {
		got, err := c.g.level(c.configured)
		if err != nil || got != c.want {
			t.Errorf("%+v with log.level %s: %v, %v; want %v", c.g, c.configured, got, err, c.want)
		}
	}
	if _, err := (&globalFlags{logLevel: "loud"}).level("info"); err == nil || !strings.HasPrefix(err.Error(), "--log-level: ") {
		t.Errorf("--log-level loud: %v", err)
	}
}

// TestErrorsPrintedAsText: warden's own multi-line messages (cobra's
// did-you-mean, a config's problems, one per line) reach the terminal as lines,
// without \x0a-style escapes, each line after the first indented; the
// exit code is 2.
func TestErrorsPrintedAsText(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := runIn(t, dir, nil, "tool")
	if want := "warden: unknown command \"tool\" for \"warden\"\n  Did you mean this?\n    tools\n"; code != exitUsage || stderr != want {
		t.Errorf("warden tool: exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("tool:\n  dir: x\nserver:\n  pagesize: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runIn(t, dir, nil, "tools", "-c", cfg)
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if code != exitUsage || len(lines) < 2 || escapeRE.MatchString(stderr) || !strings.HasPrefix(lines[0], "warden: ") || !strings.Contains(stderr, "tool") {
		t.Errorf("an unknown config key: exit %d, stderr:\n%s", code, stderr)
	}
	for _, line := range lines[1:] {
		if !strings.HasPrefix(line, "  ") {
			t.Errorf("a further line of the config error is not indented: %q in\n%s", line, stderr)
		}
	}
}

// TestModuleTextStaysEscaped: a module whose tool name carries a newline,
// ESC[2J and a bidi override, and a module file name that does, reach
// stderr escaped on the line they belong to: no raw control, no line a
// module began.
func TestModuleTextStaysEscaped(t *testing.T) {
	const hostile = "evil\nwarden: all granted\x1b[2J\u202e"
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	wasm := testwasm.DescribingWAT(t, hostile)
	evil := filepath.Join(dir, "evil.wasm")
	if err := os.WriteFile(evil, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	// A file name is its module's name.
	if err := os.WriteFile(filepath.Join(tools, "mod"+hostile+".wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("tools:\n  dir: %s\n  cache_dir: %s\n", tools, filepath.Join(dir, "cache"))), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"inspect", evil, "-c", cfg},
		{"call", "evil", "-c", cfg},
		{"tools", "-c", cfg},
	} {
		_, stderr, _ := runIn(t, dir, nil, args...)
		t.Logf("warden %v:\n%s", args, stderr)
		for _, raw := range []string{"\x1b", "\u202e", "\nwarden: all granted"} {
			if strings.Contains(stderr, raw) {
				t.Errorf("warden %v: stderr holds %q raw:\n%s", args, raw, stderr)
			}
		}
		if !strings.Contains(stderr, `warden: all granted`) {
			t.Errorf("warden %v: stderr does not show the module's text (escaped):\n%s", args, stderr)
		}
	}
}

// TestPrintError: the lines printError writes for each kind of error.
func TestPrintError(t *testing.T) {
	hostile := "a\nwarden: b\x1b[2J"
	for _, c := range []struct {
		err  error
		want string
	}{
		{errors.New("load " + hostile), "warden: load a\\x0awarden: b\\x1b[2J\n"},
		{usageError{errors.New(hostile)}, "warden: a\\x0awarden: b\\x1b[2J\n"},
		{usageError{textError{errors.New("one\n\ntwo:\n\tthree\x1b[2J\n")}}, "warden: one\n  two:\n    three\\x1b[2J\n"},
		{errors.Join(errors.New("first"), errors.New(hostile)), "warden: first\n  a\\x0awarden: b\\x1b[2J\n"},
		{fmt.Errorf("start: %w", errors.Join(errors.New("x"), errors.New("y"))), "warden: start: x\\x0ay\n"},
		{hintError{err: errors.New("no config"), hint: "looked here\nand there"}, "warden: no config\n  looked here\n  and there\n"},
	} {
		var b strings.Builder
		printError(&b, c.err)
		if b.String() != c.want {
			t.Errorf("printError(%q):\n%s\nwant:\n%s", c.err, b.String(), c.want)
		}
	}
}

// TestOneShotIsQuiet: warden call and warden tools print their result and
// nothing on stderr, though config says log.level: info (serve's); -v,
// before or after the command, shows what they load and compile, as does
// --log-level info. A module that fails to load is warned about when the
// call needs it loaded, and not read at all when it does not.
func TestOneShotIsQuiet(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools, "greet.wasm"), testwasm.ReplyingWAT(t, "hello", "greet"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("tools:\n  dir: %s\n  cache_dir: %s\nlog:\n  level: info\n", tools, filepath.Join(dir, "cache"))), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"call", "greet", "-c", cfg}, {"-c", cfg, "call", "greet"}, {"tools", "-c", cfg}} {
		stdout, stderr, code := runIn(t, dir, nil, args...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "greet") && !strings.Contains(stdout, "hello") {
			t.Errorf("warden %v: exit %d, stdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
		}
	}
	for _, args := range [][]string{{"call", "greet", "-v", "-c", cfg}, {"-v", "call", "greet", "-c", cfg}, {"call", "greet", "--log-level", "info", "-c", cfg}} {
		stdout, stderr, code := runIn(t, dir, nil, args...)
		if code != 0 || !strings.Contains(stdout, "hello") || !strings.Contains(stderr, "level=INFO") {
			t.Errorf("warden %v: exit %d, stdout:\n%s\nstderr (want info lines):\n%s", args, code, stdout, stderr)
		}
	}
	// A module the call does not need is not even read: a broken one
	// beside greet says nothing.
	broken := []byte("not wasm")
	if err := os.WriteFile(filepath.Join(tools, "broken.wasm"), broken, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runIn(t, dir, nil, "call", "greet", "-c", cfg); code != 0 || stderr != "" {
		t.Errorf("warden call beside a broken module it does not need: exit %d, stderr:\n%s", code, stderr)
	}
	// A warning still shows: a module that fails to load, loaded because
	// the call needs it (pinned, it could have served greet instead).
	sum := sha256.Sum256(broken)
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("tools:\n  dir: %s\n  cache_dir: %s\n  pins: {broken: %x}\nlog:\n  level: info\n", tools, filepath.Join(dir, "cache"), sum)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runIn(t, dir, nil, "call", "greet", "-c", cfg)
	if code != 0 || !strings.Contains(stderr, "level=WARN") || !strings.Contains(stderr, "broken.wasm") || strings.Contains(stderr, "level=INFO") {
		t.Errorf("warden call beside a broken pinned module: exit %d, stderr:\n%s", code, stderr)
	}
}
