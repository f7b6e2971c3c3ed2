package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/tool"
)

var testIcons = []tool.Icon{{Src: "https://warden.example.com/icon.png", MimeType: "image/png", Sizes: []string{"48x48"}, Theme: "dark"}}

func testDiscovery(url string) *Discovery {
	return &Discovery{Name: "io.github.warden-run/warden", Title: "warden", Description: "MCP tools in a WebAssembly sandbox",
		Version: "1.2.3", Icons: testIcons, URL: url, Auth: true}
}

// cardSchema is the SEP-2127 draft's Server Card schema, vendored.
func cardSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	raw, err := os.ReadFile("testdata/server-card.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func get(t *testing.T, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, body
}

// TestServerCard: the card is served without authentication at the
// streamable-HTTP URL's /server-card, valid against the draft's schema,
// with the media type, CORS, caching and ETag the draft asks for; it names
// no tool (a hidden or scoped one included), and /mcp still requires the
// token.
func TestServerCard(t *testing.T) {
	tools := &scopedTools{fakeTools: newFakeTools(desc("alpha"), desc("secret_admin")), scopes: map[string][]string{"secret_admin": {"admin"}}}
	s, _ := newServer(t, tools, Options{})
	hs := httptest.NewServer(s.Handler(HTTPOptions{Token: "s3cr3t-bearer", Discovery: testDiscovery("https://warden.example.com/mcp")}))
	defer hs.Close()

	res, body := get(t, hs.URL+PathServerCard, map[string]string{"Accept": MediaTypeServerCard})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", PathServerCard, res.StatusCode, body)
	}
	for k, want := range map[string]string{"Content-Type": MediaTypeServerCard, "Access-Control-Allow-Origin": "*",
		"Cache-Control": "public, max-age=3600", "Access-Control-Expose-Headers": "ETag"} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	var card map[string]any
	if err := json.Unmarshal(body, &card); err != nil {
		t.Fatal(err)
	}
	if err := cardSchema(t).Validate(card); err != nil {
		t.Errorf("the card is not a Server Card of the draft: %v\n%s", err, body)
	}
	remote := card["remotes"].([]any)[0].(map[string]any)
	if remote["url"] != "https://warden.example.com/mcp" || remote["type"] != "streamable-http" ||
		remote["headers"].([]any)[0].(map[string]any)["name"] != "Authorization" {
		t.Errorf("remote %v", remote)
	}
	if icons := card["icons"].([]any); len(icons) != 1 || icons[0].(map[string]any)["src"] != testIcons[0].Src {
		t.Errorf("icons %v", icons)
	}
	for _, leak := range []string{"alpha", "secret_admin", "admin", `"tools"`, "s3cr3t-bearer"} {
		if strings.Contains(string(body), leak) {
			t.Errorf("the card holds %q:\n%s", leak, body)
		}
	}

	etag := res.Header.Get("ETag")
	if res, _ := get(t, hs.URL+PathServerCard, map[string]string{"If-None-Match": etag}); res.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match the ETag: %d, want 304", res.StatusCode)
	}
	// Another Host (loopback, as the guard requires) gets the same bytes:
	// nothing of the request is reflected into a cached document.
	if _, other := get(t, strings.Replace(hs.URL, "127.0.0.1", "localhost", 1)+PathServerCard, nil); string(other) != string(body) {
		t.Errorf("the card depends on the request:\n%s\n%s", other, body)
	}
	post, err := http.Post(hs.URL+PathServerCard, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", post.StatusCode)
	}
	if res, _ := get(t, hs.URL+PathMCP, nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("/mcp without the token: %d, want 401", res.StatusCode)
	}

	res, body = get(t, hs.URL+PathAICatalog, nil)
	var cat struct {
		SpecVersion string
		Entries     []struct{ Identifier, Type, URL string }
	}
	if err := json.Unmarshal(body, &cat); err != nil || res.Header.Get("Content-Type") != MediaTypeAICatalog {
		t.Fatalf("catalog %d %q: %v %s", res.StatusCode, res.Header.Get("Content-Type"), err, body)
	}
	want := []struct{ Identifier, Type, URL string }{{"urn:air:warden.example.com:mcp:warden", MediaTypeServerCard, "https://warden.example.com/mcp/server-card"}}
	if cat.SpecVersion != "1.0" || !reflect.DeepEqual(cat.Entries, want) {
		t.Errorf("catalog %+v", cat)
	}
}

// TestServerCardWithoutURL: without a configured URL the card names no
// remote (never one built from the request's Host), and there is no
// catalog to point at it. Off, nothing is served.
func TestServerCardWithoutURL(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("alpha")), Options{})
	hs := httptest.NewServer(s.Handler(HTTPOptions{Discovery: testDiscovery("")}))
	defer hs.Close()
	_, body := get(t, hs.URL+PathServerCard, nil)
	var card map[string]any
	if err := json.Unmarshal(body, &card); err != nil {
		t.Fatal(err)
	}
	if err := cardSchema(t).Validate(card); err != nil || card["remotes"] != nil {
		t.Errorf("card %s: %v", body, err)
	}
	card["name"] = "warden" // no namespace: the schema, and so the test above, refuses it
	if err := cardSchema(t).Validate(card); err == nil {
		t.Error("the vendored schema accepts a card named without a namespace")
	}
	if res, _ := get(t, hs.URL+PathAICatalog, nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("catalog without a URL: %d, want 404", res.StatusCode)
	}
	off := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer off.Close()
	for _, p := range []string{PathServerCard, PathAICatalog} {
		if res, _ := get(t, off.URL+p, nil); res.StatusCode == http.StatusOK {
			t.Errorf("discovery off: %s answers 200", p)
		}
	}
}

// TestCatalogNamesTheCard: the URL the AI Catalog names is the card's: a
// client fetching exactly it gets the card. A URL with a proxy's prefix
// before /mcp keeps it; a URL of another path than /mcp gets no catalog,
// rather than one naming a document this server does not serve.
func TestCatalogNamesTheCard(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("alpha")), Options{})
	var h http.Handler
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	defer hs.Close()
	h = s.Handler(HTTPOptions{Discovery: testDiscovery(hs.URL + PathMCP)})
	_, body := get(t, hs.URL+PathAICatalog, nil)
	var cat struct{ Entries []struct{ URL string } }
	if err := json.Unmarshal(body, &cat); err != nil || len(cat.Entries) != 1 {
		t.Fatalf("catalog %s: %v", body, err)
	}
	res, card := get(t, cat.Entries[0].URL, nil)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != MediaTypeServerCard || !strings.Contains(string(card), `"remotes"`) {
		t.Fatalf("GET %s, the URL the catalog names: %d %q %s", cat.Entries[0].URL, res.StatusCode, res.Header.Get("Content-Type"), card)
	}
	for url, want := range map[string]string{
		"https://warden.example.com/team/mcp":  "https://warden.example.com/team/mcp/server-card",
		"https://warden.example.com/mcp/":      "https://warden.example.com/mcp/server-card",
		"https://warden.example.com/":          "",
		"https://warden.example.com/mcp/other": "",
	} {
		if got := testDiscovery(url).cardURL(); got != want {
			t.Errorf("card of %s: %q, want %q", url, got, want)
		}
	}
	h = s.Handler(HTTPOptions{Discovery: testDiscovery("https://warden.example.com/")})
	if res, body := get(t, hs.URL+PathAICatalog, nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("catalog for a URL not of /mcp: %d %s, want 404", res.StatusCode, body)
	}
}

// TestServerCardBesideOAuth: with OAuth the card, the catalog and the
// protected resource metadata are all served, unauthenticated, and the
// card adds nothing the metadata does not already publish.
func TestServerCardBesideOAuth(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("alpha")), Options{})
	verify := func(context.Context, string) (principal.Principal, error) {
		return principal.Principal{}, errors.New("no")
	}
	hs := httptest.NewServer(s.Handler(HTTPOptions{Discovery: testDiscovery("https://warden.example.com/mcp"),
		OAuth: &OAuthOptions{Resource: "https://warden.example.com/mcp", AuthorizationServers: []string{"https://id.example.com"}, Verify: verify}}))
	defer hs.Close()
	for _, p := range []string{PathServerCard, PathAICatalog, PathProtectedResource} {
		if res, body := get(t, hs.URL+p, nil); res.StatusCode != http.StatusOK {
			t.Errorf("%s: %d %s", p, res.StatusCode, body)
		}
	}
	if res, _ := get(t, hs.URL+"/.well-known/other", nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("another well-known path: %d", res.StatusCode)
	}
}

// TestServerIcons: server.icons reach initialize's serverInfo.
func TestServerIcons(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("alpha")), Options{Icons: testIcons})
	cs := connect(t, s, transports[0], nil)
	got := cs.InitializeResult().ServerInfo.Icons
	if len(got) != 1 || got[0].Source != testIcons[0].Src || got[0].MIMEType != "image/png" || string(got[0].Theme) != "dark" || got[0].Sizes[0] != "48x48" {
		t.Errorf("serverInfo icons %+v", got)
	}
}
