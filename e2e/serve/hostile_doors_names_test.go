package serve

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/warden-run/warden/internal/oauth/oauthtest"
)

// TestHostileDoorsNamesDisagree: a stranger whose token lacks the scope of
// the tool scoped tries to reach scoped's grant by making the door see one
// name and the module another, at 2026-07-28 (stateless, with the
// Mcp-Method and Mcp-Name headers): headers naming an open tool over a body
// naming scoped, a batch that hides scoped behind open, URIs and names that
// differ from scoped's only in escaping or case. None runs scoped's code;
// each answer is pinned, and open still serves.
func TestHostileDoorsNamesDisagree(t *testing.T) {
	t.Parallel()
	is := oauthtest.NewIssuer(t)
	is.AddKey(t, jose.ES256, "k1")
	e := newEnv(t, "", "doors")
	out := filepath.Join(e.dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	resource := "http://" + addr + "/mcp"
	if err := os.WriteFile(e.config, []byte(doorsConfig(e, resource, is.URL, is.JWKSURL())), 0o644); err != nil {
		t.Fatal(err)
	}
	token := is.Sign(t, "k1", is.Claims(resource, "alice", time.Now(), "mcp"))
	s := startServeAs(t, e, addr, &http.Client{Transport: bearer{token}}, "--http="+addr)
	written := func() string {
		entries, err := os.ReadDir(out)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, en := range entries {
			names = append(names, en.Name())
		}
		return strings.Join(names, " ")
	}
	post := func(body string, headers map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", s.url(), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Authorization", "Bearer "+token)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, strings.TrimSpace(readAll(resp.Body))
	}
	// rpc is a request of method at 2026-07-28, whose params carry what
	// a stateless request must.
	rpc := func(method, params string) string {
		const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}},`
		return `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":{` + meta + params[1:] + `}`
	}

	need := `tool \"scoped\" needs the scope doors:scoped, which the access token does not grant (tools.scopes.scoped in ` + e.config + `)`
	refused := func(id, message string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32043,"message":"` + message + `"}}`
	}
	for _, c := range []struct {
		what, body string
		headers    map[string]string
		status     int
		// want is the whole body of a JSON answer, or what an SSE answer
		// (a 200's) contains.
		want string
	}{
		{"headers name open, the body calls scoped", rpc("tools/call", `{"name":"scoped","arguments":{}}`),
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "open"}, 403, refused("7", need)},
		{"headers name open's resource, the body reads scoped's", rpc("resources/read", `{"uri":"doors://scoped/resource"}`),
			map[string]string{"Mcp-Method": "resources/read", "Mcp-Name": "doors://open/resource"},
			403, refused("7", `resources/read \"doors://scoped/resource\" runs as tool \"scoped\": `+need)},
		{"headers name open's prompt, the body gets scoped's", rpc("prompts/get", `{"name":"scoped_prompt"}`),
			map[string]string{"Mcp-Method": "prompts/get", "Mcp-Name": "open_prompt"},
			403, refused("7", `prompts/get \"scoped_prompt\" runs as tool \"scoped\": `+need)},
		{"the header says tools/call of open, the body reads scoped's resource", rpc("resources/read", `{"uri":"doors://scoped/item/1"}`),
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "open"},
			403, refused("7", `resources/read \"doors://scoped/item/1\" runs as tool \"scoped\": `+need)},
		{"a batch: open's call, then scoped's", `[` + rpc("tools/call", `{"name":"open","arguments":{}}`) + `,` +
			strings.Replace(rpc("tools/call", `{"name":"scoped","arguments":{}}`), `"id":7`, `"id":8`, 1) + `]`,
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "open"}, 403, refused("null", need)},
		{"a duplicate name key: open first, scoped last", rpc("tools/call", `{"name":"open","name":"scoped","arguments":{}}`),
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "open"}, 403, refused("7", need)},
		// The door and the early check read the member the go-sdk decodes,
		// case-sensitively: open is what is called, and what runs.
		{"a key differing in case: name open, Name scoped", rpc("tools/call", `{"name":"open","Name":"scoped","arguments":{}}`),
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "open"}, 200, `"text":"ran open"`},
		{"a key differing in case: uri open's, URI scoped's", rpc("resources/read", `{"uri":"doors://open/resource","URI":"doors://scoped/resource"}`),
			map[string]string{"Mcp-Method": "resources/read", "Mcp-Name": "doors://open/resource"}, 200, `"text":"read as open"`},
		{"scoped's template URI, percent-encoded", rpc("resources/read", `{"uri":"doors://%73coped/item/1"}`),
			map[string]string{"Mcp-Method": "resources/read", "Mcp-Name": "doors://%73coped/item/1"},
			400, `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Resource not found","data":{"uri":"doors://%73coped/item/1"}}}`},
		{"scoped's template URI, upper case", rpc("resources/read", `{"uri":"DOORS://SCOPED/item/1"}`),
			map[string]string{"Mcp-Method": "resources/read", "Mcp-Name": "DOORS://SCOPED/item/1"},
			400, `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Resource not found","data":{"uri":"DOORS://SCOPED/item/1"}}}`},
		{"scoped's prompt, another case", rpc("prompts/get", `{"name":"Scoped_Prompt"}`),
			map[string]string{"Mcp-Method": "prompts/get", "Mcp-Name": "Scoped_Prompt"},
			400, `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"unknown prompt \"Scoped_Prompt\""}}`},
		// Tool names are one name whatever their case: SCOPED is scoped,
		// under scoped's scopes.
		{"scoped, another case", rpc("tools/call", `{"name":"SCOPED","arguments":{}}`),
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "SCOPED"}, 403,
			refused("7", strings.Replace(need, `\"scoped\"`, `\"SCOPED\"`, 1))},
	} {
		code, body := post(c.body, c.headers)
		if code != c.status || (code == 200 && !strings.Contains(body, c.want)) || (code != 200 && body != c.want) {
			t.Errorf("%s: %d %s\nwant %d %s", c.what, code, body, c.status, c.want)
		}
		if got := written(); strings.Contains(got, "scoped-") {
			t.Fatalf("%s: scoped's code ran: out/ holds %s", c.what, got)
		}
	}

	// open still serves, through the same door.
	if code, body := post(rpc("resources/read", `{"uri":"doors://open/resource"}`),
		map[string]string{"Mcp-Method": "resources/read", "Mcp-Name": "doors://open/resource"}); code != 200 || !strings.Contains(body, "read as open") {
		t.Fatalf("open's resource: %d %s", code, body)
	}
	if got := written(); !strings.Contains(got, "open-resource") {
		t.Fatalf("open's read left no trace: out/ holds %s", got)
	}
}
