package serve

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/testwasm"
)

// TestPromptNeverOffersInternalHostsUnderStar: the real binary serves
// netstar, whose descriptor requests net "*" and http://localhost:8080, and
// grants it nothing. Denied loopback, private, link-local and localhost
// addresses are never put to the person, whatever they would answer, and
// config.yaml stays byte-identical; the host the descriptor names is put
// to them, and the session serves on.
func TestPromptNeverOffersInternalHostsUnderStar(t *testing.T) {
	netstar := testwasm.BuildGoFile(t, filepath.Join(built.root, "internal/app/testdata/netstar"))
	for _, tr := range transports() {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, "")
			wasm, err := os.ReadFile(netstar)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(e.tools, "netstar.wasm"), wasm, 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := "# no grants: every request is denied\nproject:\n  root: " + e.dir + "\ntools:\n  dir: " + e.tools +
				"\n  cache_dir: " + built.cacheDir + "\nlog:\n  level: info\n"
			if err := os.WriteFile(e.config, []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var asked []string
			// The person would allow anything, always; only "deny" keeps the
			// offered host from being fetched.
			answer := "always"
			cs := tr.connect(t, e, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, req.Params.Message)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": answer}}, nil
			}})
			fetch := func(url string) (kind, message string) {
				t.Helper()
				res := call(t, cs, "netstar", map[string]any{"url": url})
				if res.IsError {
					t.Fatalf("netstar %s: %s", url, dump(res))
				}
				var out struct {
					Error *struct{ Kind, Message string }
				}
				raw, _ := json.Marshal(res.StructuredContent)
				if err := json.Unmarshal(raw, &out); err != nil || out.Error == nil {
					t.Fatalf("netstar %s: %s", url, raw)
				}
				return out.Error.Kind, out.Error.Message
			}
			for _, url := range []string{"https://127.0.0.1/", "https://10.0.0.7/", "https://192.168.1.1/", "https://[::1]/",
				"https://[fd00::7]/", "https://169.254.169.254/latest/meta-data", "https://localhost/", "https://app.localhost/"} {
				kind, msg := fetch(url)
				if kind != "denied" || !strings.Contains(msg, "tools.grants.netstar.net") {
					t.Fatalf("%s: %s %s", url, kind, msg)
				}
				mu.Lock()
				n := len(asked)
				mu.Unlock()
				if n != 0 {
					t.Fatalf("%s: the person was offered a host \"*\" never requested: %q", url, asked)
				}
			}
			if got, _ := os.ReadFile(e.config); string(got) != cfg {
				t.Fatalf("config.yaml changed:\n%s", got)
			}
			// The host the descriptor names is offered (and denied here).
			mu.Lock()
			answer = "deny"
			mu.Unlock()
			if kind, msg := fetch("http://localhost:8080/"); kind != "denied" || !strings.Contains(msg, "denied it when asked") {
				t.Fatalf("localhost:8080: %s %s", kind, msg)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 1 || !strings.Contains(asked[0], "http://localhost:8080") {
				t.Fatalf("asked %q, want one question for http://localhost:8080", asked)
			}
			if got, _ := os.ReadFile(e.config); string(got) != cfg {
				t.Fatalf("config.yaml changed:\n%s", got)
			}
		})
	}
}
