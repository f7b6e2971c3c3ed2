package serve

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/warden-run/warden/internal/oauth/oauthtest"
)

// TestHTTPTeamServer: warden serve as a team server, with the real
// binary: the groups a token carries put its subject in a role, whose own
// rate limit refuses the person's second call (across sessions) while
// someone in no role calls on; the Server Card is served without a token,
// naming the configured URL and icons and no tool; server.icons reach
// initialize.
func TestHTTPTeamServer(t *testing.T) {
	t.Parallel()
	is := oauthtest.NewIssuer(t)
	is.AddKey(t, jose.ES256, "k1")
	e := newEnv(t, "", "echo")
	addr := freeAddr(t)
	resource := "http://" + addr + "/mcp"
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, []byte("server:\n  oauth:\n    resource: "+resource+"\n    issuers:\n"+
		"      - {issuer: '"+is.URL+"', jwks_url: '"+is.JWKSURL()+"'}\n"+
		"  icons:\n    - {src: 'https://warden.example.com/icon.png', mime_type: image/png, sizes: [48x48]}\n"+
		"  discovery: {enabled: true, name: io.example/team-warden}\n"+
		"access:\n  roles:\n    interns:\n      groups: [interns]\n      rate_limit: {rate: 1/h, burst: 1}\n")...)
	if err := os.WriteFile(e.config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	// Every token carries the groups claim, [] for no group: a role lists
	// groups, so server.oauth.require_groups_claim is on.
	as := func(subject string, groups ...string) *http.Client {
		c := is.Claims(resource, subject, time.Now(), "")
		c["groups"] = append([]string{}, groups...)
		return &http.Client{Transport: bearer{is.Sign(t, "k1", c)}}
	}
	s := startServeAs(t, e, addr, as("ops"), "--http="+addr)

	alice := as("alice", "interns")
	wantEcho(t, s.connect(t, "2026-07-28", nil, alice), "first call")
	res := call(t, s.connect(t, "2025-11-25", nil, alice), "echo", map[string]any{"text": "second call"})
	if !res.IsError || !strings.Contains(text(t, res), `person "alice" is over its rate of 1/h calls (burst 1, access.roles.interns.rate_limit)`) {
		t.Errorf("alice's second call, another session: %s", dump(res))
	}
	bob := s.connect(t, "2026-07-28", nil, as("bob", "Interns"))
	for i := range 3 {
		wantEcho(t, bob, "bob is in no role "+string(rune('a'+i)))
	}

	// A token without the groups claim (the issuer was not asked for it)
	// would drop its bearer out of every role: refused, the 401 naming
	// the setting.
	noClaim, _ := http.NewRequest(http.MethodPost, resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	noClaim.Header.Set("Authorization", "Bearer "+is.Sign(t, "k1", is.Claims(resource, "alice", time.Now(), "")))
	noClaim.Header.Set("Content-Type", "application/json")
	noClaim.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(noClaim)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if challenge := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(challenge, `carries no groups claim, which server.oauth.require_groups_claim requires`) {
		t.Errorf("token without the groups claim: %d %q, want 401 naming server.oauth.require_groups_claim", resp.StatusCode, challenge)
	}

	resp, err = http.Get("http://" + addr + "/mcp/server-card")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var card struct {
		Name    string
		Icons   []struct{ Src string }
		Remotes []struct{ URL string }
	}
	if err := json.Unmarshal(body, &card); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("server card: %d %s", resp.StatusCode, body)
	}
	if card.Name != "io.example/team-warden" || len(card.Remotes) != 1 || card.Remotes[0].URL != resource ||
		len(card.Icons) != 1 || strings.Contains(string(body), "echo") {
		t.Errorf("server card %s", body)
	}
	cs := s.connect(t, "2026-07-28", nil, as("ops"))
	if icons := cs.InitializeResult().ServerInfo.Icons; len(icons) != 1 || icons[0].Source != "https://warden.example.com/icon.png" {
		t.Errorf("serverInfo icons %+v", icons)
	}
}
