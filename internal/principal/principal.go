// Package principal carries who is calling through a call's context: the
// subject of a verified OAuth access token, the holder of the static bearer
// token, or the local user of a stdio server. The audit log, metrics and
// scope checks read it; nothing else may trust a caller's claim of identity.
package principal

import "context"

// How a principal was established.
const (
	ViaLocal = "local" // stdio, or HTTP on loopback without authentication
	ViaToken = "token" // the static bearer token (server.token)
	ViaOAuth = "oauth" // a verified OAuth 2.1 access token
)

// Principal is the caller of a request.
type Principal struct {
	// Subject identifies the caller: the token's "sub" claim for OAuth,
	// "token" for the static bearer token, "local" otherwise.
	Subject string
	// Via says how the caller was authenticated (ViaLocal, ViaToken, ViaOAuth).
	Via string
	// Scopes are the OAuth scopes granted to the token; nil otherwise.
	Scopes []string
	// Issuer is the OAuth token's issuer; empty otherwise.
	Issuer string
	// Groups are the groups the OAuth token names (its groups claim, see
	// docs/auth.md); nil otherwise. Per-person policy and approver rights
	// follow them.
	Groups []string
}

// Local is the principal of a request that carried no credentials.
var Local = Principal{Subject: "local", Via: ViaLocal}

type key struct{}

// With returns ctx carrying p.
func With(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, key{}, p)
}

// From returns the principal ctx carries, or Local.
func From(ctx context.Context) Principal {
	if p, ok := ctx.Value(key{}).(Principal); ok {
		return p
	}
	return Local
}
