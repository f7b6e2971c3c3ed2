package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/lsp_descriptors.json from the loaded tools")

// goldenDescriptors holds the descriptors of the five LSP tools as the host
// loads them, first recorded from the five per-tool modules they were
// built as before they became one module, and updated when they stopped
// being Go-only (issue 30): names, titles, descriptions, schemas,
// annotations and requested capabilities change only on purpose.
const goldenDescriptors = "testdata/lsp_descriptors.json"

// lspDescriptors returns the loaded descriptors of the LSP tools, sorted by
// name, as indented JSON.
func lspDescriptors(t *testing.T, e *env) []byte {
	t.Helper()
	var ds []tool.Descriptor
	for _, d := range e.app.List() {
		if slices.Contains(lspTools, d.Name) {
			ds = append(ds, d)
		}
	}
	slices.SortFunc(ds, func(a, b tool.Descriptor) int { return strings.Compare(a.Name, b.Name) })
	out, err := json.MarshalIndent(ds, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

func TestLSPDescriptorsGolden(t *testing.T) {
	e := sharedEnv(t)
	got := lspDescriptors(t, e)
	if *updateGolden {
		if err := os.WriteFile(goldenDescriptors, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(filepath.FromSlash(goldenDescriptors))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the LSP tools' descriptors differ from %s (run with -update only for an intended change):\n%s", goldenDescriptors, got)
	}
}

// TestLSPOneModule: the five LSP tools are served by the one module lsp,
// which describes exactly them, with nothing refused.
func TestLSPOneModule(t *testing.T) {
	e := sharedEnv(t)
	files, err := os.ReadDir(e.tools)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Name() != lspModule+".wasm" {
		t.Fatalf("tools dir holds %v, want only %s.wasm", files, lspModule)
	}
	var module string
	for _, name := range lspTools {
		tl, ok := e.app.Catalog().Table().Tool(name)
		if !ok {
			t.Fatalf("tool %s is not served", name)
		}
		if got := tl.Module().Name(); got != lspModule {
			t.Fatalf("tool %s is served by module %s, want %s", name, got, lspModule)
		}
		module = tl.Module().Name()
	}
	m, _ := e.app.Catalog().Table().Tool(lspTools[0])
	var described []string
	for _, tl := range m.Module().Tools() {
		described = append(described, tl.Descriptor.Name)
	}
	slices.Sort(described)
	want := slices.Sorted(slices.Values(lspTools))
	if !slices.Equal(described, want) {
		t.Fatalf("module %s describes %v, want %v", module, described, want)
	}
	if r := e.app.Catalog().Refused(); len(r) != 0 {
		t.Fatalf("refused: %+v", r)
	}
}

// TestLSPGrantIsPerTool: the five tools share one module, and in a session
// one instance, yet each call carries only the grant of the tool called.
// hover is granted lsp; definition has an entry bound to lsp without lsp;
// references has an entry with lsp but no module field (so it belongs to a
// module named references, which serves nothing); workspace_symbols has no
// entry. Each denial names the config line that would allow the call, and
// hover keeps working in the same session after them.
func TestLSPGrantIsPerTool(t *testing.T) {
	goplsPath(t)
	e := newEnv(t, `    hover:
      module: lsp
      lsp: [go]
      fs:
        read: ["."]
    definition:
      module: lsp
      fs:
        read: ["."]
    references:
      lsp: [go]
      fs:
        read: ["."]
`)
	const session = "one-session"
	call := func(name string, args any) *tool.Result {
		t.Helper()
		raw, _ := json.Marshal(args)
		res, err := e.app.Call(context.Background(), mcpserver.Call{Pass: mcpserver.LocalPass(), Name: name, Arguments: raw, Session: session, Observer: nopObserver{}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	denied := func(name string, args any, wants ...string) {
		t.Helper()
		res := call(name, args)
		if !res.IsError || res.Error == nil || res.Error.Kind != tool.KindDenied {
			t.Fatalf("%s: want a denied error, got %+v %s", name, res.Error, res.StructuredContent)
		}
		for _, w := range wants {
			if !strings.Contains(res.Error.Message, w) {
				t.Fatalf("%s: error %q does not contain %q", name, res.Error.Message, w)
			}
		}
	}
	hover := func() {
		t.Helper()
		res := call("hover", map[string]any{"path": "main.go", "line": 12, "name": "Total"})
		var out hoverOut
		if res.IsError || json.Unmarshal(res.StructuredContent, &out) != nil || !out.Found || !strings.HasPrefix(out.Text, "func shapes.Total(") {
			t.Fatalf("hover with its grant: %+v %s", res.Error, res.StructuredContent)
		}
	}
	at := map[string]any{"path": "main.go", "line": 12, "column": 21}
	hover()
	denied("definition", at,
		"tool definition is not granted lsp access (config key tools.grants.definition.lsp, e.g. [go])")
	denied("references", at,
		"tools.grants.references is bound to module references (no module field: the module named like the tool)",
		`tool "references" is served by module lsp`, "warden grant references --module lsp")
	denied("workspace_symbols", map[string]any{"query": "Total"},
		"tool workspace_symbols is not granted lsp access (config key tools.grants.workspace_symbols.lsp",
		`config has no tools.grants.workspace_symbols; tool "workspace_symbols" is served by module lsp, so that entry needs module: lsp`)
	denied("symbols", map[string]any{"path": "main.go"},
		`config has no tools.grants.symbols; tool "symbols" is served by module lsp, so that entry needs module: lsp`)
	// The instance the denied calls ran in still serves hover with its grant.
	hover()
}
