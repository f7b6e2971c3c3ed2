package mcpserver

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/warden-run/warden/internal/oauth"
	"github.com/warden-run/warden/internal/oauth/oauthtest"
)

// FuzzAuthorizationHeader: whatever Authorization headers a request to /mcp
// carries (none of them a valid token), the answer is 401 with a Bearer
// challenge naming the metadata, never a panic and never the go-sdk.
func FuzzAuthorizationHeader(f *testing.F) {
	is := oauthtest.NewIssuer(f)
	is.AddKey(f, jose.ES256, "ec-1")
	const resource = "https://warden.example.com/mcp"
	v, err := oauth.New(oauth.Options{
		Resource: resource,
		Issuers:  []oauth.Issuer{{Issuer: is.URL, JWKSURL: is.JWKSURL()}},
	})
	if err != nil {
		f.Fatal(err)
	}
	s := New(newFakeTools(desc("a")), Options{Logger: slog.New(slog.DiscardHandler)})
	f.Cleanup(func() { s.Close() })
	h := s.Handler(HTTPOptions{OAuth: &OAuthOptions{
		Resource: resource, AuthorizationServers: []string{is.URL}, Verify: v.VerifyPrincipal,
	}})

	past := time.Now().Add(-time.Hour)
	expired := is.Sign(f, "ec-1", is.Claims(resource, "alice", past, "mcp"))
	for _, seed := range [][2]string{
		{"", ""},
		{"Bearer", ""},
		{"Bearer " + expired, ""},
		{"bearer   " + expired + "  ", ""},
		{"Bearer " + expired, "Bearer " + expired},
		{"Bearer " + oauthtest.Unsigned(f, "ec-1", is.Claims(resource, "alice", time.Now(), "")), ""},
		{"Basic YWxhZGRpbjpvcGVuc2VzYW1l", ""},
		{"Bearer a.b.c", ""},
		{"Bearer ..", ""},
		{"Bearer eyJhbGciOiJFUzI1NiIsImtpZCI6Ilx1MDAwMCJ9.e30.AAAA", ""},
		{"Bearer \x00\xff", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, first, second string) {
		req := httptest.NewRequest("POST", PathMCP, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		if first != "" {
			req.Header.Add("Authorization", first)
		}
		if second != "" {
			req.Header.Add("Authorization", second)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("Authorization %q %q: status %d, want 401: %s", first, second, rec.Code, rec.Body)
		}
		if got := rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, `Bearer resource_metadata="https://warden.example.com/.well-known/oauth-protected-resource/mcp"`) {
			t.Fatalf("Authorization %q %q: WWW-Authenticate %q", first, second, got)
		}
	})
}
