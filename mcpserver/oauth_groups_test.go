package mcpserver

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestOAuthGroupsReachTheCall: a verified token's groups claim is the
// call's principal's Groups, which per-person policy reads; a token whose
// groups claim cannot be read exactly is refused with 401 invalid_token.
func TestOAuthGroupsReachTheCall(t *testing.T) {
	o := newOAuthServer(t)
	claims := o.is.Claims(o.resource, "alice", o.clock.Now(), "mcp")
	claims["groups"] = []string{"devs", "ops"}
	cs, _ := o.connect(t, "", o.is.Sign(t, "rsa-1", claims))
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "beta"}); err != nil || res.IsError {
		t.Fatalf("call: %+v %v", res, err)
	}
	o.mu.Lock()
	who := o.calls[len(o.calls)-1].who
	o.mu.Unlock()
	if !slices.Equal(who.Groups, []string{"devs", "ops"}) {
		t.Errorf("the call's principal has groups %q, want devs, ops", who.Groups)
	}

	claims["groups"] = []string{"devs", "ad\u200dmins"}
	resp, body := o.post(t, listBody, "Bearer "+o.is.Sign(t, "rsa-1", claims))
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error_description="the access token's groups claim is malformed"`) {
		t.Errorf("a token with an invisible character in a group: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}
}
