package serve

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestWarmRestartListsFromManifests: after one run has stored the
// descriptor manifests (in a cache dir of the test's own), `warden serve`
// answers its first tools/list complete, naming nothing as loading, and
// compiles nothing until a tool is called; the first call of echo then
// compiles echo alone, reports that it waits for the load to a client that
// sent a progressToken, and works.
func TestWarmRestartListsFromManifests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo", "hostcalls")
	cache := filepath.Join(e.dir, "cache")
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), "cache_dir: "+built.cacheDir, "cache_dir: "+cache, 1))
	if err := os.WriteFile(e.config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}

	// The first run compiles both modules and stores their manifests
	// (`warden cache warm`: `warden tools` would store the manifests but,
	// a one-shot command, compile nothing for the serve to find).
	cmd := exec.Command(built.warden, "cache", "warm", "-v", "--config", e.config) // -v: the "module compiled" lines
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Count(string(out), "module compiled") != 2 {
		t.Fatalf("warden cache warm (cold): %v\n%s", err, out)
	}
	manifests, _ := filepath.Glob(filepath.Join(cache, "manifests", "*.manifest"))
	if len(manifests) != 2 {
		t.Fatalf("manifests stored: %v", manifests)
	}

	n := &notes{}
	cs, stderr := stdioServerLoading(t, e, "", n.options())
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, loading := res.Meta["warden/loading"]; loading || len(res.Tools) != 2 {
		t.Fatalf("first tools/list of a warm restart: %s", dump(res))
	}

	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "warm"}}
	params.SetProgressToken("first-call")
	got, err := cs.CallTool(context.Background(), params)
	if err != nil || got.IsError || text(t, got) != "warm" {
		t.Fatalf("first call: %v %s", err, dump(got))
	}
	eventually(t, "progress while echo loads", func() bool {
		p, ok := n.lastProgress()
		return ok && p.ProgressToken == "first-call" && strings.Contains(p.Message, "loading module echo")
	})
	// The server logs one line per compile; the first call's line is
	// written after any made at start, so once it is there all are.
	eventually(t, "echo compiled on its first call", func() bool {
		return len(stderr.lines("module compiled")) > 0
	})
	if lines := stderr.lines("module compiled"); len(lines) != 1 || !strings.Contains(lines[0], "module=echo") {
		t.Fatalf("compiles: %q, want echo's alone (on its first call)", lines)
	}
	wantEcho(t, cs, "second call")
}
