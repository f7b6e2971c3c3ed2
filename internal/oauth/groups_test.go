package oauth_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/warden-run/warden/internal/oauth"
	"github.com/warden-run/warden/internal/oauth/oauthtest"
)

// TestGroupsClaim: the groups a verified token lists reach its principal,
// from a string or a list, under the configured claim name, as written.
func TestGroupsClaim(t *testing.T) {
	for _, tc := range []struct {
		name  string
		claim string // Options.GroupsClaim
		set   map[string]any
		want  []string
	}{
		{"list", "", map[string]any{"groups": []string{"devs", "ops", "devs"}}, []string{"devs", "ops"}},
		{"string is one group", "", map[string]any{"groups": "Domain Users"}, []string{"Domain Users"}},
		{"absent", "", map[string]any{}, nil},
		{"null", "", map[string]any{"groups": nil}, nil},
		{"named claim", "https://example.com/roles", map[string]any{"groups": []string{"ignored"}, "https://example.com/roles": []string{"admin"}}, []string{"admin"}},
		{"case and form kept", "", map[string]any{"groups": []string{"Admins", "admins", "café", "cafe\u0301"}}, []string{"Admins", "admins", "café", "cafe\u0301"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(o *oauth.Options) { o.GroupsClaim = tc.claim })
			c := f.claims()
			for k, v := range tc.set {
				c[k] = v
			}
			p, err := f.v.VerifyPrincipal(context.Background(), f.is.Sign(t, "ec-1", c))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Groups, tc.want) {
				t.Errorf("groups %q, want %q", p.Groups, tc.want)
			}
		})
	}
}

// TestGroupsClaimRefused: a groups claim warden cannot read exactly is
// refused with the token, never cut or cleaned: a group dropped or a name
// changed could widen what its member may do or alias another group.
func TestGroupsClaimRefused(t *testing.T) {
	many := make([]string, oauth.MaxGroups+1)
	for i := range many {
		many[i] = "g" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
	}
	for _, tc := range []struct {
		name  string
		value any
	}{
		{"a number", 7},
		{"an object", map[string]any{"a": "b"}},
		{"a list holding a number", []any{"devs", 1}},
		{"too many", many},
		{"too long", []string{strings.Repeat("a", oauth.MaxGroupBytes+1)}},
		{"empty name", []string{"devs", ""}},
		{"NUL", []string{"devs\x00admins"}},
		{"newline", []string{"devs\nadmins"}},
		{"zero-width joiner", []string{"ad\u200dmins"}},
		{"bidi override", []string{"\u202esnimda"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			c := f.claims()
			c["groups"] = tc.value
			f.refused(t, f.is.Sign(t, "ec-1", c), "the access token's groups claim is malformed")
		})
	}
}

// TestForgedGroupsOtherIssuer: groups are read only from a token whose
// issuer is trusted and whose signature that issuer's keys check: a token
// another issuer signed, naming the trusted issuer and an admin group, is
// refused before its groups are read.
func TestForgedGroupsOtherIssuer(t *testing.T) {
	f := newFixture(t)
	other := oauthtest.NewIssuer(t)
	other.AddKey(t, jose.ES256, "ec-1")
	c := other.Claims(resource, "mallory", t0, "mcp tools:read")
	c["groups"] = []string{"admins"}
	f.refused(t, other.Sign(t, "ec-1", c), "the access token's issuer is not trusted here")
	c["iss"] = f.is.URL
	f.refused(t, other.Sign(t, "ec-1", c), "the access token's signature is invalid")
}

// FuzzGroupsClaim: whatever the claim's JSON, a token carrying it is
// either refused with the groups message or accepted with groups that all
// pass CheckGroup, at most MaxGroups, each once.
func FuzzGroupsClaim(f *testing.F) {
	fx := newFixture(f)
	for _, s := range []string{`["devs","ops"]`, `"one"`, `null`, `[1]`, `{"a":1}`, `["a\u0000b"]`, `["a","a"]`, `""`, `["\u200d"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) {
			return
		}
		c := fx.claims()
		c["groups"] = json.RawMessage(raw)
		tok, err := fx.v.Verify(context.Background(), fx.is.Sign(t, "ec-1", c))
		if err != nil {
			if e, ok := err.(*oauth.Error); !ok || e.Description != "the access token's groups claim is malformed" {
				t.Fatalf("refused otherwise: %v", err)
			}
			return
		}
		if len(tok.Groups) > oauth.MaxGroups {
			t.Fatalf("%d groups", len(tok.Groups))
		}
		seen := map[string]bool{}
		for _, g := range tok.Groups {
			if err := oauth.CheckGroup(g); err != nil || seen[g] {
				t.Fatalf("group %q accepted (%v, seen %v)", g, err, seen[g])
			}
			seen[g] = true
		}
	})
}

// TestGroupsRequired: with RequireGroups a token whose groups are unknown
// is refused, its 401 saying why: no groups claim (an issuer leaves it out
// when the optional groups scope is not asked for), or Entra ID's overage
// (_claim_names naming the claim, hasgroups); an empty list is a person in
// no group and passes. Without RequireGroups, such tokens pass without
// groups, as before.
func TestGroupsRequired(t *testing.T) {
	const absent = `the access token carries no groups claim, which server.oauth.require_groups_claim requires: ` +
		"ask the authorization server for the groups (e.g. request the groups scope, or add a groups mapper)"
	const over = "the access token does not carry the subject's groups: its issuer moved them out of the token " +
		"(too many groups: _claim_names or hasgroups, Entra ID's group overage), and this server decides by groups " +
		"(server.oauth.require_groups_claim); have the issuer send only the groups assigned to the application"
	for _, tc := range []struct {
		name, refused string
		set           map[string]any
	}{
		{"absent", absent, map[string]any{}},
		{"null", absent, map[string]any{"groups": nil}},
		{"overage _claim_names", over, map[string]any{"_claim_names": map[string]any{"groups": "src1"},
			"_claim_sources": map[string]any{"src1": map[string]any{"endpoint": "https://graph.example.com/x"}}}},
		{"overage hasgroups", over, map[string]any{"hasgroups": true}},
		{"overage beside a partial list", over, map[string]any{"groups": []string{"devs"}, "hasgroups": true}},
		{"_claim_names not an object", over, map[string]any{"_claim_names": "groups"}},
		{"empty list", "", map[string]any{"groups": []string{}}},
		{"other claim overage", "", map[string]any{"groups": []string{"devs"}, "_claim_names": map[string]any{"roles": "src1"}}},
		{"hasgroups false", "", map[string]any{"groups": []string{"devs"}, "hasgroups": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, require := range []bool{true, false} {
				f := newFixture(t, func(o *oauth.Options) { o.RequireGroups = require })
				c := f.claims()
				for k, v := range tc.set {
					c[k] = v
				}
				token := f.is.Sign(t, "ec-1", c)
				if require && tc.refused != "" {
					f.refused(t, token, tc.refused)
					continue
				}
				if _, err := f.v.VerifyPrincipal(context.Background(), token); err != nil {
					t.Errorf("require %v: %v", require, err)
				}
			}
		})
	}
}
