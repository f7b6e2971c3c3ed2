package oauth_test

import (
	"context"
	"testing"

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
