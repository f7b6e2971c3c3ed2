package oauth_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/warden-run/warden/internal/oauth"
	"github.com/warden-run/warden/internal/oauth/oauthtest"
)

// FuzzVerify: whatever the token, Verify neither panics nor accepts one
// that is not the seed's own (a mutation can only ever leave the same
// token, e.g. by flipping unused bits of the signature's last character).
func FuzzVerify(f *testing.F) {
	fx := newFixture(f)
	is, v := fx.is, fx.v
	claims := is.Claims(resource, "alice", t0, "mcp")
	for _, kid := range []string{"ec-1", "rsa-1"} {
		f.Add(is.Sign(f, kid, claims))
	}
	f.Add(oauthtest.Unsigned(f, "ec-1", claims))
	f.Add(oauthtest.SignHS256(f, []byte("0123456789abcdef0123456789abcdef"), "ec-1", claims))
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("..")
	f.Fuzz(func(t *testing.T, token string) {
		tok, err := v.Verify(context.Background(), token)
		if err == nil && (tok.Subject != "alice" || tok.Issuer != is.URL) {
			t.Fatalf("accepted %q as %+v", token, tok)
		}
	})
}

// FuzzGroupsRequired: whatever claims an issuer signs beside the usual
// ones, with RequireGroups a token is accepted only when it carries its
// groups claim and says nowhere that its groups are elsewhere; nothing
// panics.
func FuzzGroupsRequired(f *testing.F) {
	fx := newFixture(f, func(o *oauth.Options) { o.RequireGroups = true })
	for _, seed := range []string{`{"groups":["devs"]}`, `{}`, `{"groups":null}`, `{"hasgroups":true}`,
		`{"_claim_names":{"groups":"src1"}}`, `{"_claim_names":"groups","groups":[]}`, `{"groups":"one","hasgroups":"true"}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, extra string) {
		var set map[string]any
		if json.Unmarshal([]byte(extra), &set) != nil {
			return
		}
		c := fx.claims()
		for k, v := range set {
			c[k] = v
		}
		if _, err := fx.v.Verify(context.Background(), fx.is.Sign(t, "ec-1", c)); err != nil {
			return
		}
		names, isMap := c["_claim_names"].(map[string]any)
		_, named := names["groups"]
		if c["groups"] == nil || c["hasgroups"] == true || named || (c["_claim_names"] != nil && !isMap) {
			t.Fatalf("accepted claims %v", c)
		}
	})
}
