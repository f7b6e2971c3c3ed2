package e2e

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/warden-run/warden/tool"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/lsp_descriptors.json from the loaded tools")

// goldenDescriptors holds the descriptors of the five LSP tools as the host
// loads them, first recorded from the five per-tool modules they were
// built as before they became one module: names, titles, descriptions,
// schemas, annotations and requested capabilities must not change.
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
