package config

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/warden-run/warden/internal/download"
)

// Bounds of server.oauth's durations.
const (
	maxClockSkew      = 10 * time.Minute
	minJWKSRefreshMin = time.Second
	maxJWKSRefreshMin = 24 * time.Hour
)

func (c *Config) validateScopes(fail func(key, format string, args ...any)) {
	for _, pattern := range sortedKeys(c.Tools.Scopes) {
		key := "tools.scopes." + pattern
		if err := checkToolPattern(pattern); err != nil {
			fail(key, "%q is not a tool name or pattern: %v", pattern, err)
		}
		scopes := c.Tools.Scopes[pattern]
		if len(scopes) == 0 {
			fail(key, "lists no scope: name the OAuth scopes a call needs, or remove the entry")
		}
		for _, s := range scopes {
			if err := CheckScope(s); err != nil {
				fail(key, "%v", err)
			}
		}
	}
}

func (c *Config) validateOAuth(fail func(key, format string, args ...any)) {
	o := c.Server.OAuth
	if o.ClockSkew < 0 || o.ClockSkew > maxClockSkew {
		fail("server.oauth.clock_skew", "must be between 0s and %s, got %s", maxClockSkew, o.ClockSkew)
	}
	if o.JWKSRefreshMin < minJWKSRefreshMin || o.JWKSRefreshMin > maxJWKSRefreshMin {
		fail("server.oauth.jwks_refresh_min", "must be between %s and %s, got %s", minJWKSRefreshMin, maxJWKSRefreshMin, o.JWKSRefreshMin)
	}
	for _, s := range o.Scopes {
		if err := CheckScope(s); err != nil {
			fail("server.oauth.scopes", "%v", err)
		}
	}
	if err := CheckAccessName(o.GroupsClaim); err != nil {
		fail("server.oauth.groups_claim", "names the claim that lists a token's groups: %v", err)
	}
	if !o.Enabled() {
		return
	}
	if c.Server.Token != "" {
		fail("server.token", "is set together with server.oauth: set one (server.token: one shared secret for a single user; "+
			"server.oauth: access tokens from an authorization server), not both")
	}
	if o.Resource == "" {
		fail("server.oauth.resource", "is required with server.oauth: this server's canonical URL as clients reach it, "+
			"e.g. https://warden.example.com/mcp (tokens' audience must contain it)")
	} else if err := CheckResourceURL(o.Resource); err != nil {
		fail("server.oauth.resource", "%v", err)
	}
	if len(o.Issuers) == 0 {
		fail("server.oauth.issuers", "is required with server.oauth: at least one {issuer, jwks_url}, the authorization servers whose tokens are accepted")
	}
	seen := map[string]int{}
	for i, is := range o.Issuers {
		key := fmt.Sprintf("server.oauth.issuers[%d]", i)
		if is.Issuer == "" {
			fail(key+".issuer", "is required: the issuer identifier, exactly as tokens' iss claim says")
		} else if err := checkHTTPSURL(is.Issuer, false); err != nil {
			fail(key+".issuer", "%v", err)
		} else if j, dup := seen[is.Issuer]; dup {
			fail(key+".issuer", "%q is listed twice (also server.oauth.issuers[%d])", is.Issuer, j)
		} else {
			seen[is.Issuer] = i
		}
		if is.JWKSURL == "" {
			fail(key+".jwks_url", "is required: where the issuer's signing keys are published (its metadata's jwks_uri)")
		} else if err := checkHTTPSURL(is.JWKSURL, true); err != nil {
			fail(key+".jwks_url", "%v", err)
		}
	}
}

// RequireGroupsClaim reports whether a token without its groups claim is
// refused (server.oauth.require_groups_claim): as set, else on whenever
// some access.roles entry lists groups. A token without the claim is a
// member of no group, and without access.widen a role only narrows: a
// missing claim, which an issuer omits when the optional groups scope is
// not requested, would give its bearer all of tools.grants.
func (c *Config) RequireGroupsClaim() bool {
	if r := c.Server.OAuth.RequireGroupsClaim; r != nil {
		return *r
	}
	for _, r := range c.Access.Roles {
		if len(r.Groups) > 0 {
			return true
		}
	}
	return false
}

// CheckScope reports whether s is an OAuth scope token (RFC 6749 §3.3:
// printable ASCII without space, '"' or '\').
func CheckScope(s string) error {
	if s == "" {
		return fmt.Errorf("a scope must not be empty")
	}
	for _, r := range s {
		if r < 0x21 || r > 0x7e || r == '"' || r == '\\' {
			return fmt.Errorf("%q is not an OAuth scope (printable ASCII without spaces, quotes or backslashes)", s)
		}
	}
	return nil
}

// CheckResourceURL reports whether raw is a canonical resource URL (RFC
// 8707, as the MCP authorization spec uses it): https:// (http:// only for
// a loopback host), scheme and host in lower case, no user:password, query
// or fragment.
func CheckResourceURL(raw string) error {
	if err := checkHTTPSURL(raw, false); err != nil {
		return err
	}
	u, _ := url.Parse(raw)
	if u.Scheme != strings.ToLower(u.Scheme) || u.Host != strings.ToLower(u.Host) {
		return fmt.Errorf("%q is not canonical: write the scheme and host in lower case", raw)
	}
	return nil
}

// checkHTTPSURL checks an absolute https:// URL (http:// for a loopback
// host) without user:password or fragment, and without a query unless
// query is true.
func checkHTTPSURL(raw string, query bool) error {
	// shown, never raw: a user:password@ in the URL is not printed.
	shown := strconv.Quote(download.ShowURL(raw))
	u, err := url.Parse(raw)
	if err != nil {
		if strings.Contains(raw, "@") { // the parser's message may quote a password
			return fmt.Errorf("%s is not a URL", shown)
		}
		return fmt.Errorf("%s is not a URL: %v", shown, err)
	}
	if u.User != nil || u.Fragment != "" || strings.Contains(raw, "#") {
		return fmt.Errorf("%s: the URL must carry no user:password or #fragment", shown)
	}
	if !query && (u.RawQuery != "" || u.ForceQuery) {
		return fmt.Errorf("%s: the URL must carry no ?query", shown)
	}
	switch u.Scheme { // url.Parse lowers the scheme
	case "https":
	case "http":
		if !download.LoopbackHost(u.Hostname()) {
			return fmt.Errorf("%s: plain http:// is allowed only for loopback hosts (localhost, 127.0.0.0/8, ::1), "+
				"and %s is not one: use https://", shown, u.Host)
		}
	default:
		return fmt.Errorf("%s is not an https:// URL", shown)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%s names no host", shown)
	}
	return nil
}

// ScopesFor returns the OAuth scopes a call of the tool called name needs
// and the tools.scopes key they come from, resolved as GateFor resolves
// gates. ok is false when no entry applies. A running server asks it once
// per tool and config load (internal/policy), not per call.
func (c *Config) ScopesFor(name string) (scopes []string, key string, ok bool) {
	return lookupTool(c.Tools.Scopes, name)
}

// ToolScopes lists every scope tools.scopes names, sorted, once each.
func (c *Config) ToolScopes() []string {
	seen := map[string]bool{}
	var all []string
	for _, scopes := range c.Tools.Scopes {
		for _, s := range scopes {
			if !seen[s] {
				seen[s] = true
				all = append(all, s)
			}
		}
	}
	sort.Strings(all)
	return all
}
