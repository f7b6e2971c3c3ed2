package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// TestPermissionPromptNeverOffersInternalHostsUnderStar: a tool whose
// descriptor requests net "*" is denied https://127.0.0.1, 10.0.0.7, a
// link-local, a unique-local and a localhost address, and the person is
// never asked: "*" did not request them, so "allow always" must not write
// them. An internal host the descriptor names is offered, and a public one
// under "*" is too (both denied here, so nothing is fetched).
func TestPermissionPromptNeverOffersInternalHostsUnderStar(t *testing.T) {
	dir := t.TempDir()
	wasm, err := os.ReadFile(testwasm.BuildGoFile(t, "testdata/netstar"))
	if err != nil {
		t.Fatal(err)
	}
	project, tools := filepath.Join(dir, "project"), filepath.Join(dir, "tools")
	os.MkdirAll(project, 0o755)
	os.MkdirAll(tools, 0o755)
	if err := os.WriteFile(filepath.Join(tools, "netstar.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	a, cfgPath := startApp(t, project, fmt.Sprintf("project:\n  root: .\ntools:\n  dir: ../tools\n  cache_dir: %s\n", userCacheDir), nil)
	if errs := a.Catalog().LoadTools(context.Background()); len(errs) != 0 {
		t.Fatal(errs)
	}
	before, _ := os.ReadFile(cfgPath)
	fetch := func(p *person, url string) outcome {
		t.Helper()
		args, _ := json.Marshal(map[string]string{"url": url})
		res, err := a.Call(context.Background(), mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "netstar", Arguments: args, Observer: nopObserver{}, Client: p})
		if err != nil || res.IsError {
			t.Fatalf("netstar %s: %v %+v", url, err, res)
		}
		var out outcome
		if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, url := range []string{"https://127.0.0.1/", "https://10.0.0.7/", "https://[::1]/", "https://[fd00::7]/",
		"https://169.254.169.254/latest", "https://localhost/", "https://app.localhost/"} {
		p := &person{elicit: true, answers: []string{"accept:always"}}
		out := fetch(p, url)
		if out.Error == nil || out.Error.Kind != tool.KindDenied || !strings.Contains(out.Error.Message, "tools.grants.netstar.net") {
			t.Fatalf("%s: %+v", url, out)
		}
		if q := p.questions(); len(q) != 0 {
			t.Fatalf("%s: the person was offered a host \"*\" never requested: %s", url, q[0].Params)
		}
	}
	if after, _ := os.ReadFile(cfgPath); string(after) != string(before) {
		t.Fatalf("config.yaml changed:\n%s", after)
	}
	for _, url := range []string{"http://localhost:8080/", "https://api.example.com/"} {
		p := &person{elicit: true, answers: []string{"accept:deny"}}
		out := fetch(p, url)
		if out.Error == nil || !strings.Contains(out.Error.Message, "denied it when asked") {
			t.Fatalf("%s: %+v", url, out)
		}
		if q := p.questions(); len(q) != 1 || !strings.Contains(string(q[0].Params), strings.TrimSuffix(url, "/")) {
			t.Fatalf("%s: asked %+v", url, q)
		}
	}
}
