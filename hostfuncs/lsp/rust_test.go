package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rustAnalyzer returns a rust-analyzer that runs, or skips. rustup installs
// a rust-analyzer proxy on PATH even without the component, and that proxy
// fails ("Unknown binary 'rust-analyzer' in official toolchain"): only
// running it tells.
func rustAnalyzer(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("rust-analyzer")
	if err != nil {
		t.Skip("rust-analyzer is not on PATH: rustup component add rust-analyzer")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, p, "--version")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		t.Skipf("rust-analyzer on PATH (%s) does not run: `rust-analyzer --version`: %v: %s; rustup component add rust-analyzer", p, err, first)
	}
	return p
}

// TestRustAnalyzer runs the five tools' queries against rust-analyzer on a
// tiny cargo project (made offline by cargo init), when a working
// rust-analyzer is installed.
func TestRustAnalyzer(t *testing.T) {
	ra := rustAnalyzer(t)
	cargo, err := exec.LookPath("cargo")
	if err != nil {
		t.Skip("cargo is not installed")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cargo, "init", "--offline", "--vcs", "none", "--name", "shapes", root)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cargo init: %v\n%s", err, out)
	}
	lib := "/// Area of a rectangle.\npub fn area(width: u32, height: u32) -> u32 {\n    width * height\n}\n"
	main := "use shapes::area;\n\nfn main() {\n    println!(\"{}\", area(2, 3) + area(4, 5));\n}\n"
	for rel, content := range map[string]string{"src/lib.rs": lib, "src/main.rs": main} {
		if err := os.WriteFile(filepath.Join(root, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := NewManager(Config{Languages: map[string]Language{"rust": {Command: ra, Extensions: []string{".rs"}, LanguageID: "rust"}}, ShutdownGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c, err := NewCapability(m, func() string { return root }, fakeGate{allow: []string{""}})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(req map[string]any) string {
		t.Helper()
		req["language"] = "rust"
		b, _ := json.Marshal(req)
		res, err := c.Serve(context.Background(), callWith("rust"), b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		out, _ := json.Marshal(res)
		return string(out)
	}
	// rust-analyzer loads the cargo workspace in the background and
	// answers empty until then: ask until it answers, bounded.
	until := func(req map[string]any, want string) string {
		t.Helper()
		var got string
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
			if got = ask(req); strings.Contains(got, want) || time.Now().After(deadline) {
				return got
			}
		}
	}
	use := needleAt(t, main, "area(2")
	decl := needleAt(t, lib, "area(")
	if got := until(map[string]any{"op": "documentSymbol", "path": "src/lib.rs"}, `"name":"area"`); !strings.Contains(got, `{"name":"area","kind":"function"`) {
		t.Fatalf("symbols of src/lib.rs: %s", got)
	}
	wantDef := `{"path":"src/lib.rs","line":2,"column":8,"endLine":2,"endColumn":12}`
	if got := until(map[string]any{"op": "definition", "path": "src/main.rs", "line": use.Line, "column": use.Column}, "src/lib.rs"); !strings.Contains(got, wantDef) {
		t.Fatalf("definition of area: %s, want %s", got, wantDef)
	}
	if got := until(map[string]any{"op": "references", "path": "src/lib.rs", "line": decl.Line, "column": decl.Column, "includeDeclaration": true}, `"total":4`); !strings.Contains(got, `"total":4`) {
		t.Fatalf("references of area (declaration, import, two calls): %s", got)
	}
	if got := until(map[string]any{"op": "hover", "path": "src/main.rs", "line": use.Line, "column": use.Column}, "Area of a rectangle"); !strings.Contains(got, "pub fn area(width: u32, height: u32) -> u32") {
		t.Fatalf("hover of area: %s", got)
	}
	if got := until(map[string]any{"op": "workspaceSymbol", "query": "area"}, "src/lib.rs"); !strings.Contains(got, `"name":"area","kind":"function"`) {
		t.Fatalf("workspace symbols area: %s", got)
	}
}
