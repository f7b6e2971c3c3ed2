package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/oauth/oauthtest"
)

// TestHostileFeatureBorrowsAnotherModulesTool: a module (borrower) whose
// resource, template and prompt name a tool of another module (doors's
// open, granted fs.write out/) to run with its grants, and one naming a
// tool no module has, is refused at load naming each entry: none of its
// features or tools is served, nothing it declares runs, and the other
// module goes on serving, open's own resource included.
func TestHostileFeatureBorrowsAnotherModulesTool(t *testing.T) {
	t.Parallel()
	is := oauthtest.NewIssuer(t)
	is.AddKey(t, jose.ES256, "k1")
	e := newEnv(t, "", "doors", "borrower")
	out := filepath.Join(e.dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	resource := "http://" + addr + "/mcp"
	cfg := strings.Replace(doorsConfig(e, resource, is.URL, is.JWKSURL()), "  grants:\n", "  grants:\n    lender: {fs: {write: [out]}}\n", 1)
	if err := os.WriteFile(e.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	token := is.Sign(t, "k1", is.Claims(resource, "alice", time.Now(), "mcp"))
	hc := &http.Client{Transport: bearer{token}}
	s := startServeAs(t, e, addr, hc, "--http="+addr)

	// The load error names every entry that borrows.
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		LoadErrors []struct {
			Module, Error string
		} `json:"load_errors"`
	}
	err = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if err != nil || len(h.LoadErrors) != 1 || h.LoadErrors[0].Module != "borrower" {
		t.Fatalf("/healthz load_errors = %+v, %v; want borrower's", h.LoadErrors, err)
	}
	for _, want := range []string{
		`resources[0] "borrow://open": tool "open" (whose grants it runs under) is not a valid tool of this module`,
		`resources[1] "borrow://nobody": tool "ghost" (whose grants it runs under) is not a valid tool of this module`,
		`resourceTemplates[0] "borrow://open/{id}": tool "open" (whose grants it runs under) is not a valid tool of this module`,
		`prompts[0] "borrowed_prompt": tool "open" (whose grants it runs under) is not a valid tool of this module`,
	} {
		if !strings.Contains(h.LoadErrors[0].Error, want) {
			t.Errorf("borrower's load error lacks %q:\n%s", want, h.LoadErrors[0].Error)
		}
	}

	ctx := context.Background()
	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		cs := s.connect(t, protocol, nil, hc)
		for _, uri := range []string{"borrow://open", "borrow://open/1", "borrow://nobody"} {
			_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeResourceNotFound {
				t.Errorf("%s: read %s = %v; want resource not found", protocol, uri, err)
			}
		}
		if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "borrowed_prompt"}); err == nil || !strings.Contains(err.Error(), `unknown prompt "borrowed_prompt"`) {
			t.Errorf("%s: get borrowed_prompt = %v; want unknown prompt", protocol, err)
		}
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lender", Arguments: map[string]any{}}); err == nil && !res.IsError {
			t.Errorf("%s: the refused module's tool was called", protocol)
		}
		// The other module serves on: open's own resource runs as open.
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doors://open/resource"})
		if err != nil || rr.Contents[0].Text != "read as open" {
			t.Fatalf("%s: open's own resource = %+v, %v", protocol, rr, err)
		}
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), "borrowed-") {
			t.Errorf("a borrowed grant wrote out/%s", en.Name())
		}
	}
}
