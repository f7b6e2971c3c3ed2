package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/oci/ocitest"
	"github.com/warden-run/warden/internal/sigverify/sigtest"
	"github.com/warden-run/warden/internal/testwasm"
)

// TestInstallUpdateSyncWhileServing drives the real binary as a user
// would, against a real registry that requires the Docker config's
// credentials: `warden install oci://…` of a key-signed tool while `warden
// serve --http` runs makes the tool callable; `warden update` to a release
// requesting more (approved with --accept-capabilities) is picked up by
// the running server without a restart; and after the module file is lost,
// `warden sync` brings back exactly the locked version.
//
// It sets DOCKER_CONFIG for the children, so it does not run in parallel.
func TestInstallUpdateSyncWhileServing(t *testing.T) {
	dir := filepath.Join(built.root, "cmd/warden/testdata/released")
	v1, err := os.ReadFile(testwasm.BuildGoFileVars(t, dir, map[string]string{"version": "1.0.0"}))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := os.ReadFile(testwasm.BuildGoFileVars(t, dir, map[string]string{"version": "2.0.0", "host": "api.example.com"}))
	if err != nil {
		t.Fatal(err)
	}
	reg := ocitest.Start(t, nil)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfigDir)
	sign, pub := sigtest.ECDSAKey(t)
	push := func(module []byte) string {
		p := reg.Pusher(t, "acme/released")
		m := p.WasmArtifact(module, "latest")
		p.Referrer(m, sigtest.KeyBundle(t, sign, m.Digest.String()))
		return m.Digest.String()
	}
	first := push(v1)

	e := newEnv(t, "")
	keyFile := filepath.Join(e.dir, "acme.pub")
	if err := os.WriteFile(keyFile, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(e.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "security:\n  signatures:\n    %q: {key: %s}\n", reg.Host+"/acme/*", keyFile)
	f.Close()

	srv := startHTTP(t, e)
	cs := srv.connect(t, "2025-11-25", nil, nil)
	answers := func(want string) func() bool {
		return func() bool {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "released", Arguments: map[string]any{}})
			return err == nil && !res.IsError && len(res.Content) == 1 && res.Content[0].(*mcp.TextContent).Text == want
		}
	}

	ref := "oci://" + reg.Host + "/acme/released:latest"
	out, stderr, code := runWarden(t, "install", "--yes", "--config", e.config, ref)
	if code != 0 || !strings.Contains(out, "verified: signed with the public key") {
		t.Fatalf("install: exit %d\n%s\n%s", code, out, stderr)
	}
	eventually(t, "the installed tool to answer", answers("release 1.0.0"))

	second := push(v2)
	out, stderr, code = runWarden(t, "update", "--yes", "--config", e.config)
	if code == 0 || !strings.Contains(out, "+ requests net=api.example.com") {
		t.Fatalf("update --yes of a release requesting more: exit %d\n%s\n%s", code, out, stderr)
	}
	if !answers("release 1.0.0")() {
		t.Fatal("a refused update changed what is served")
	}
	out, stderr, code = runWarden(t, "update", "--yes", "--accept-capabilities", "--config", e.config)
	if code != 0 || !strings.Contains(out, "moved from "+first+" to "+second) {
		t.Fatalf("update: exit %d\n%s\n%s", code, out, stderr)
	}
	eventually(t, "the running server to serve the update", answers("release 2.0.0"))

	if err := os.Remove(filepath.Join(e.tools, "released.wasm")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the server to drop the removed module", func() bool { return !answers("release 2.0.0")() })
	out, stderr, code = runWarden(t, "sync", "--config", e.config)
	if code != 0 || !strings.Contains(out, "released: fetched "+ref+" at "+second) {
		t.Fatalf("sync: exit %d\n%s\n%s", code, out, stderr)
	}
	eventually(t, "the synced module to answer", answers("release 2.0.0"))
}
