package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// migrateEnv is a project whose tools dir holds the echo fixture under each
// of modules' names (so module NAME serves tool echo), pinned where pinned
// says, and whose config.yaml is cfg with PINS replaced by the pins.
func migrateEnv(t *testing.T, cfg string, modules []string, pinned ...string) (dir, sum string) {
	t.Helper()
	dir = t.TempDir()
	wasm, err := os.ReadFile(built.wasm["echo"])
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(wasm)
	sum = hex.EncodeToString(h[:])
	if err := os.Mkdir(filepath.Join(dir, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, m := range modules {
		if err := os.WriteFile(filepath.Join(dir, "tools", m+".wasm"), wasm, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var pins strings.Builder
	for _, m := range pinned {
		pins.WriteString("    " + m + ": " + sum + "\n")
	}
	cfg = strings.Replace(cfg, "CACHE", built.cacheDir, 1)
	cfg = strings.Replace(cfg, "PINS\n", pins.String(), 1)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, sum
}

// legacyConfig grants echo from an entry written before grants belonged
// to modules: no module field.
const legacyConfig = `# my tools
tools:
  dir: tools
  cache_dir: CACHE
  pins:
PINS
  grants:
    # the echo tool, from the plugin
    echo:
      net: [api.example.com]   # reviewed
`

// TestMigrate: warden migrate shows the binding it would write for a tool
// served by a pinned module of another name, writes nothing without a
// confirmation, writes it with --yes (comments kept), after which the tool
// has its grant; run again it changes nothing.
func TestMigrate(t *testing.T) {
	dir, sum := migrateEnv(t, legacyConfig, []string{"plugin"}, "plugin")
	cfg := filepath.Join(dir, "config.yaml")
	before, _ := os.ReadFile(cfg)
	review := "Grant entries without a module field, and the pinned module now serving each tool (" + cfg + "):\n" +
		"\n" +
		"  tools.grants.echo (grants: net=api.example.com)\n" +
		"  + module: plugin    # module plugin (pinned sha256 " + sum[:12] + ") serves tool echo\n"

	out, stderr, code := wardenIn(t, dir, nil, "migrate")
	if code != 2 || out != review || !strings.HasSuffix(stderr, "warden: nothing written: confirm on a terminal, or pass --yes to write these bindings\n") {
		t.Fatalf("without --yes: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 2, stdout:\n%s", code, out, stderr, review)
	}
	if now, _ := os.ReadFile(cfg); string(now) != string(before) {
		t.Fatalf("config written without confirmation:\n%s", now)
	}

	out, stderr, code = wardenIn(t, dir, nil, "migrate", "--yes")
	if code != 0 || out != review+"Wrote 1 binding to "+cfg+".\n" {
		t.Fatalf("--yes: exit %d, stdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	want := strings.Replace(string(before), "      net: [api.example.com]   # reviewed\n",
		"      net: [api.example.com]   # reviewed\n      module: plugin\n", 1)
	if now, _ := os.ReadFile(cfg); string(now) != want {
		t.Fatalf("config after migrate:\n%s\nwant:\n%s", now, want)
	}

	out, _, code = wardenIn(t, dir, nil, "migrate", "--yes")
	if code != 0 || out != "Nothing to migrate: every grant entry in "+cfg+" names its module or belongs to the module named like its tool.\n" {
		t.Fatalf("again: exit %d, stdout:\n%s", code, out)
	}
	if now, _ := os.ReadFile(cfg); string(now) != want {
		t.Fatalf("config changed by the second run:\n%s", now)
	}
	out, stderr, code = wardenIn(t, dir, nil, "tools")
	if code != 0 || !strings.Contains(out, "echo  plugin") || !strings.Contains(out, "net=api.example.com") {
		t.Fatalf("tools after migrate: exit %d\n%s%s", code, out, stderr)
	}
}

// TestMigrateUnpinned (attacker): a module nobody pinned, serving a tool
// named like a grant entry, is not offered the entry: a pin is the version
// a person reviewed, and the binding hands it everything the entry grants.
func TestMigrateUnpinned(t *testing.T) {
	dir, _ := migrateEnv(t, legacyConfig, []string{"dropped"})
	cfg := filepath.Join(dir, "config.yaml")
	before, _ := os.ReadFile(cfg)
	out, stderr, code := wardenIn(t, dir, nil, "migrate", "--yes")
	want := "\nNot bound:\n" +
		"  tools.grants.echo: tool echo is served by module dropped, which is not pinned: a pin is the version you reviewed, " +
		"and a binding hands that module everything the entry grants; warden install it (or grant echo --module dropped by hand), then migrate again\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0, stdout:\n%s", code, out, stderr, want)
	}
	if now, _ := os.ReadFile(cfg); string(now) != string(before) {
		t.Fatalf("config written:\n%s", now)
	}
}

// TestMigrateTwoModules (attacker): a tool that two pinned modules describe
// is served by neither; migrate binds the entry to neither and says how to
// choose.
func TestMigrateTwoModules(t *testing.T) {
	dir, _ := migrateEnv(t, legacyConfig, []string{"a", "b"}, "a", "b")
	cfg := filepath.Join(dir, "config.yaml")
	before, _ := os.ReadFile(cfg)
	out, stderr, code := wardenIn(t, dir, nil, "migrate", "--yes")
	want := "\nNot bound:\n" +
		"  tools.grants.echo: tool echo is described by several modules (a, b) and none serves it: choose one with warden grant echo --module MODULE\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0, stdout:\n%s", code, out, stderr, want)
	}
	if now, _ := os.ReadFile(cfg); string(now) != string(before) {
		t.Fatalf("config written:\n%s", now)
	}
}

// TestMigrateSymlinkedConfig: a config.yaml that is a symlink stays one;
// the file it points at is edited.
func TestMigrateSymlinkedConfig(t *testing.T) {
	dir, _ := migrateEnv(t, strings.Replace(legacyConfig, "dir: tools", "dir: "+"TOOLS", 1), []string{"plugin"}, "plugin")
	real := filepath.Join(t.TempDir(), "real.yaml")
	src, _ := os.ReadFile(filepath.Join(dir, "config.yaml"))
	src = []byte(strings.Replace(string(src), "TOOLS", filepath.Join(dir, "tools"), 1))
	if err := os.WriteFile(real, src, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "config.yaml")
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := wardenIn(t, dir, nil, "migrate", "--yes")
	if code != 0 || !strings.HasSuffix(out, "Wrote 1 binding to "+link+".\n") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if target, err := os.Readlink(link); err != nil || target != real {
		t.Fatalf("config.yaml is no longer the symlink: %q, %v", target, err)
	}
	if now, _ := os.ReadFile(real); !strings.Contains(string(now), "      module: plugin\n") {
		t.Fatalf("the symlink's target after migrate:\n%s", now)
	}
}

// TestMigrateReadOnlyConfig (attacker): a config made read-only is left as
// it is, even for root, whom the mode does not stop.
func TestMigrateReadOnlyConfig(t *testing.T) {
	dir, _ := migrateEnv(t, legacyConfig, []string{"plugin"}, "plugin")
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.Chmod(cfg, 0o444); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(cfg)
	_, stderr, code := wardenIn(t, dir, nil, "migrate", "--yes")
	want := "warden: config " + cfg + " is read-only (mode 0444): nothing written; make it writable to change it\n"
	if code != 1 || !strings.HasSuffix(stderr, want) {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1, ending:\n%s", code, stderr, want)
	}
	if now, _ := os.ReadFile(cfg); string(now) != string(before) {
		t.Fatalf("config written:\n%s", now)
	}
}
