package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestToolsShowsAFailedModule: a module that fails to load is a FAILED row
// with the reason (not an empty table and a note about /healthz), in the
// table and in -o json, and `warden tools` exits 1 naming it on stderr.
func TestToolsShowsAFailedModule(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo")
	broken := filepath.Join(e.tools, "broken.wasm")
	if err := os.WriteFile(broken, []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(e.tools, "echo.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	echoSum := hex.EncodeToString(sum[:])
	reason := "load " + broken + ": invalid module: wasm offset 0x0: not a WebAssembly module (bad magic)"

	stdout, stderr, code := runWarden(t, "tools", "--config", e.config, "--log-level", "error")
	want := "NAME  MODULE  SHA256        REQUESTED  GRANTED  NOT GRANTED\n" +
		"echo  echo    " + echoSum[:12] + "  -          -        -\n" +
		"-     broken  -             FAILED: " + reason + "\n"
	wantErr := "warden: 1 module failed to load (broken)\n"
	if stdout != want || stderr != wantErr || code != 1 {
		t.Fatalf("warden tools: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 1, stdout:\n%s\nstderr:\n%s", code, stdout, stderr, want, wantErr)
	}

	stdout, stderr, code = runWarden(t, "tools", "-o", "json", "--config", e.config, "--log-level", "error")
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("warden tools -o json: %v\n%s", err, stdout)
	}
	wantJSON := map[string]any{
		"tools": []any{map[string]any{"name": "echo", "module": "echo", "sha256": echoSum,
			"requested": map[string]any{}, "granted": map[string]any{}, "notGranted": map[string]any{}, "taskSupport": "forbidden"}},
		"failed":          []any{map[string]any{"module": "broken", "error": reason}},
		"rejected":        []any{},
		"refused":         []any{},
		"grantsElsewhere": []any{},
		"unusable":        []any{},
		"serversMissing":  []any{},
	}
	if !reflect.DeepEqual(got, wantJSON) || stderr != wantErr || code != 1 {
		t.Fatalf("warden tools -o json: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 1, %v, stderr %q", code, stdout, stderr, wantJSON, wantErr)
	}

	// With the module gone, the list is whole again and the exit 0.
	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runWarden(t, "tools", "--config", e.config, "--log-level", "error")
	want = "NAME  MODULE  SHA256        REQUESTED  GRANTED  NOT GRANTED\n" +
		"echo  echo    " + echoSum[:12] + "  -          -        -\n"
	if stdout != want || stderr != "" || code != 0 {
		t.Fatalf("warden tools: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0, stdout:\n%s", code, stdout, stderr, want)
	}

	stdout, stderr, code = runWarden(t, "tools", "-o", "yaml", "--config", e.config)
	if wantErr := "warden: -o \"yaml\": want table or json\n"; stdout != "" || stderr != wantErr || code != 2 {
		t.Fatalf("warden tools -o yaml: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 2, stderr %q", code, stdout, stderr, wantErr)
	}
}

// TestInspectAnInstalledModule: inspect takes an installed module's name
// (in any case, as config does) as well as a file, and -o table summarises
// it; a name that is neither is a usage error saying where it looked.
func TestInspectAnInstalledModule(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo")
	byFile, stderr, code := runWarden(t, "inspect", "--config", e.config, "--log-level", "error", filepath.Join(e.tools, "echo.wasm"))
	if code != 0 || stderr != "" {
		t.Fatalf("inspect FILE: exit %d, stderr:\n%s", code, stderr)
	}
	byName, stderr, code := runWarden(t, "inspect", "--config", e.config, "--log-level", "error", "ECHO")
	if code != 0 || stderr != "" || byName != byFile {
		t.Fatalf("inspect ECHO: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0 and the output of inspect FILE:\n%s", code, byName, stderr, byFile)
	}
	var in struct {
		SHA256  string   `json:"sha256"`
		Imports []string `json:"imports"`
		Exports []string `json:"exports"`
	}
	if err := json.Unmarshal([]byte(byName), &in); err != nil {
		t.Fatal(err)
	}

	table, stderr, code := runWarden(t, "inspect", "echo", "-o", "table", "--config", e.config, "--log-level", "error")
	want := "MODULE   echo\n" +
		"SHA256   " + in.SHA256 + "\n" +
		"IMPORTS  wasi_snapshot_preview1 (" + strconv.Itoa(len(in.Imports)) + ")\n" +
		"EXPORTS  " + strings.Join(in.Exports, " ") + "\n" +
		"\n" +
		"TOOL  VERSION  REQUESTED  DESCRIPTION\n" +
		"echo  1.0.0    -          Returns the given text unchanged.\n"
	if table != want || stderr != "" || code != 0 {
		t.Fatalf("inspect echo -o table: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0, stdout:\n%s", code, table, stderr, want)
	}

	stdout, stderr, code := runWarden(t, "inspect", "nope", "--config", e.config)
	wantErr := "warden: no file nope, and no module nope installed in " + e.tools + " (see `warden tools`)\n"
	if stdout != "" || stderr != wantErr || code != 2 {
		t.Fatalf("inspect nope: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 2, stderr %q", code, stdout, stderr, wantErr)
	}
}
