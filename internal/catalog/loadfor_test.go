package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
)

// catalogWith starts a catalog on w whose config's tools section adds
// toolsYAML, with no compile cache: no module has a cached manifest, so
// each one LoadFor needs loads.
func (w *world) catalogWith(t *testing.T, toolsYAML string) *Catalog {
	t.Helper()
	return w.newCatalog(t, toolsYAML, nil)
}

func loadedModules(c *Catalog) []string {
	var names []string
	for _, m := range c.Table().Modules() {
		names = append(names, m.Name())
	}
	return names
}

func sum(wasm []byte) string {
	s := sha256.Sum256(wasm)
	return hex.EncodeToString(s[:])
}

// TestLoadForStopsAtItsServer: LoadFor loads modules one at a time and
// stops once the name is served by a module no unloaded one could take it
// from; the modules after it are never loaded (compiled), and what it
// serves is what loading everything would serve.
func TestLoadForStopsAtItsServer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		modules   map[string][]byte
		toolsYAML func(modules map[string][]byte) string
		tool      string
		reply     string   // what the tool answers; "" when it is not served
		loaded    []string // the modules loaded, sorted
		errs      int      // the errors LoadFor returns (collisions)
	}{{
		name: "the module named like the tool goes first",
		modules: map[string][]byte{
			"alpha": testwasm.ReplyingWAT(t, "alpha", "a"),
			"beta":  testwasm.ReplyingWAT(t, "beta", "b"),
			"echo":  testwasm.ReplyingWAT(t, "echo", "echo"),
		},
		tool: "echo", reply: "echo", loaded: []string{"echo"},
	}, {
		name: "the module the grant is bound to goes first",
		modules: map[string][]byte{
			"alpha": testwasm.ReplyingWAT(t, "alpha", "a"),
			"beta":  testwasm.ReplyingWAT(t, "beta", "x"),
			"x":     testwasm.ReplyingWAT(t, "x", "other"),
		},
		toolsYAML: func(map[string][]byte) string { return "  grants:\n    x: {module: beta}\n" },
		tool:      "x", reply: "beta", loaded: []string{"beta"},
	}, {
		// alpha serves x first, but pinned beta, still unloaded, would win
		// it: LoadFor goes on to beta, then stops (gamma stays unloaded).
		name: "a pinned module still to load is waited for",
		modules: map[string][]byte{
			"alpha": testwasm.ReplyingWAT(t, "alpha", "x"),
			"beta":  testwasm.ReplyingWAT(t, "beta", "x"),
			"gamma": testwasm.ReplyingWAT(t, "gamma", "y"),
		},
		toolsYAML: func(m map[string][]byte) string { return "  pins:\n    beta: " + sum(m["beta"]) + "\n" },
		tool:      "x", reply: "beta", loaded: []string{"alpha", "beta"}, errs: 1,
	}, {
		// The grant binds x to gamma, last in file order: gamma loads first
		// and serves x, as a starting server serves it while alpha, an
		// unpinned rival, still loads (HeldBy); alpha is not loaded.
		name: "the grant's module serves before an unpinned rival loads",
		modules: map[string][]byte{
			"alpha": testwasm.ReplyingWAT(t, "alpha", "x"),
			"beta":  testwasm.ReplyingWAT(t, "beta", "y"),
			"gamma": testwasm.ReplyingWAT(t, "gamma", "x"),
		},
		toolsYAML: func(map[string][]byte) string { return "  grants:\n    x: {module: gamma}\n" },
		tool:      "x", reply: "gamma", loaded: []string{"gamma"},
	}, {
		// alpha, pinned, serves x; beta, pinned too, is still to load and
		// would refuse it with alpha's: LoadFor loads it, and x is refused,
		// as it is once everything loads.
		name: "a second pinned module is loaded, and refuses the name",
		modules: map[string][]byte{
			"x":     testwasm.ReplyingWAT(t, "x1", "other"),
			"alpha": testwasm.ReplyingWAT(t, "alpha", "x"),
			"beta":  testwasm.ReplyingWAT(t, "beta", "x"),
		},
		toolsYAML: func(m map[string][]byte) string {
			return "  pins:\n    alpha: " + sum(m["alpha"]) + "\n    beta: " + sum(m["beta"]) + "\n"
		},
		tool: "x", reply: "", loaded: []string{"alpha", "beta", "x"}, errs: 2,
	}, {
		name: "an unknown name loads everything",
		modules: map[string][]byte{
			"alpha": testwasm.ReplyingWAT(t, "alpha", "a"),
			"beta":  testwasm.ReplyingWAT(t, "beta", "b"),
		},
		tool: "nope", reply: "", loaded: []string{"alpha", "beta"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			for name, wasm := range tc.modules {
				w.put(t, name, wasm)
			}
			yaml := ""
			if tc.toolsYAML != nil {
				yaml = tc.toolsYAML(tc.modules)
			}
			c := w.catalogWith(t, yaml)
			errs := c.LoadFor(context.Background(), tc.tool)
			if got := loadedModules(c); !slices.Equal(got, tc.loaded) {
				t.Errorf("loaded %v, want %v", got, tc.loaded)
			}
			if len(errs) != tc.errs {
				t.Errorf("errors: %v, want %d", errs, tc.errs)
			}
			if tc.reply != "" {
				wantReply(t, c, tc.tool, tc.reply)
				return
			}
			if _, ok := c.Table().Tool(tc.tool); ok {
				t.Errorf("%s is served", tc.tool)
			}
		})
	}
}

// TestLoadForLeavesOtherFilesUnread: when the module config names for the
// tool serves it, LoadFor opens no other module file: one whose very name
// is refused (refused before it is read) reports nothing, where LoadTools
// reports it.
func TestLoadForLeavesOtherFilesUnread(t *testing.T) {
	w := newWorld(t)
	w.put(t, "echo", testwasm.ReplyingWAT(t, "echo", "echo"))
	w.put(t, "bad name", testwasm.ReplyingWAT(t, "other", "other"))
	c := w.catalogWith(t, "")
	if errs := c.LoadFor(context.Background(), "echo"); len(errs) != 0 {
		t.Fatalf("LoadFor(echo): %v, want no error (the other file unread)", errs)
	}
	wantReply(t, c, "echo", "echo")
	if errs := c.LoadTools(context.Background()); len(errs) != 1 || !strings.Contains(errs[0].Error(), `module name "bad name"`) {
		t.Fatalf("LoadTools: %v, want the bad name refused", errs)
	}
}
