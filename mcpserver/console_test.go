package mcpserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestConsoleMountHasItsOwnLogin: the console under ConsolePath is
// reached without the bearer token /mcp requires (a browser sends none;
// the console checks its own session), and only under its path.
func TestConsoleMountHasItsOwnLogin(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("echo")), Options{})
	hs := httptest.NewServer(s.Handler(HTTPOptions{Token: "secret-token", ConsolePath: "/console/",
		Console: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "console:"+r.URL.Path) })}))
	defer hs.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/console/approvals"); code != http.StatusOK || body != "console:/console/approvals" {
		t.Errorf("/console/approvals without a token: %d %q", code, body)
	}
	if code, _ := get("/mcp"); code != http.StatusUnauthorized {
		t.Errorf("/mcp without a token: %d, want 401", code)
	}
	if code, body := get("/consolex"); code == http.StatusOK && strings.HasPrefix(body, "console:") {
		t.Errorf("/consolex reached the console")
	}
}
