package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOAuthConfig(t *testing.T) {
	c, err := Load(writeConfig(t, `
server:
  oauth:
    resource: https://warden.example.com/mcp
    issuers:
      - {issuer: https://idp.example.com, jwks_url: https://idp.example.com/.well-known/jwks.json}
      - {issuer: "http://127.0.0.1:9000/realms/dev", jwks_url: "http://127.0.0.1:9000/realms/dev/certs?x=1"}
    scopes: [mcp]
tools:
  scopes:
    "fs_*": [files:read]
    "fs_w*": [files:read, files:write]
    fs_write_notes: [notes]
`))
	if err != nil {
		t.Fatal(err)
	}
	o := c.Server.OAuth
	if !o.Enabled() || o.ClockSkew != time.Minute || o.JWKSRefreshMin != time.Minute || len(o.Issuers) != 2 ||
		o.Issuers[1].JWKSURL != "http://127.0.0.1:9000/realms/dev/certs?x=1" {
		t.Errorf("server.oauth = %+v", o)
	}
	for name, want := range map[string]string{
		"fs_read":        "fs_*:files:read",
		"FS_Write":       "fs_w*:files:read,files:write", // the longest pattern wins
		"fs_write_notes": "fs_write_notes:notes",         // an exact name beats patterns
		"other":          ":",
	} {
		scopes, key, _ := c.ScopesFor(name)
		if got := key + ":" + strings.Join(scopes, ","); got != want {
			t.Errorf("ScopesFor(%s) = %s, want %s", name, got, want)
		}
	}
	if got := c.ToolScopes(); !slices.Equal(got, []string{"files:read", "files:write", "notes"}) {
		t.Errorf("ToolScopes = %v", got)
	}

	c, err = Load(writeConfig(t, "server: {token: s3cret}\n"))
	if err != nil || c.Server.OAuth.Enabled() {
		t.Errorf("no server.oauth: enabled %v, %v", c.Server.OAuth.Enabled(), err)
	}
}

// TestOAuthResourceFromEnv: the resource, a scalar, can come from the
// environment like every scalar key.
func TestOAuthResourceFromEnv(t *testing.T) {
	t.Setenv("WARDEN_SERVER_OAUTH_RESOURCE", "https://w.example.com")
	c, err := Load(writeConfig(t, "server: {oauth: {issuers: [{issuer: 'https://idp', jwks_url: 'https://idp/jwks'}]}}\n"))
	if err != nil || c.Server.OAuth.Resource != "https://w.example.com" {
		t.Errorf("resource %q, %v", c.Server.OAuth.Resource, err)
	}
}

func TestOAuthConfigInvalid(t *testing.T) {
	const issuer = "issuers: [{issuer: 'https://idp.example.com', jwks_url: 'https://idp.example.com/jwks'}]"
	for body, want := range map[string]string{
		"server: {token: t, oauth: {resource: 'https://w.example.com', " + issuer + "}}":                                                                                          "server.token: is set together with server.oauth",
		"server: {oauth: {" + issuer + "}}":                                                                                                                                       "server.oauth.resource: is required with server.oauth",
		"server: {oauth: {resource: 'https://w.example.com'}}":                                                                                                                    "server.oauth.issuers: is required with server.oauth",
		"server: {oauth: {scopes: [mcp]}}":                                                                                                                                        "server.oauth.resource: is required",
		"server: {oauth: {resource: 'http://w.example.com', " + issuer + "}}":                                                                                                     "server.oauth.resource: \"http://w.example.com\": plain http:// is allowed only for loopback hosts",
		"server: {oauth: {resource: 'https://W.example.com/mcp', " + issuer + "}}":                                                                                                "server.oauth.resource: \"https://W.example.com/mcp\" is not canonical",
		"server: {oauth: {resource: 'https://w.example.com/mcp#x', " + issuer + "}}":                                                                                              "server.oauth.resource: \"https://w.example.com/mcp#x\": the URL must carry no user:password or #fragment",
		"server: {oauth: {resource: 'https://w.example.com/mcp?a=b', " + issuer + "}}":                                                                                            "server.oauth.resource: \"https://w.example.com/mcp?a=b\": the URL must carry no ?query",
		"server: {oauth: {resource: 'w.example.com', " + issuer + "}}":                                                                                                            "server.oauth.resource: \"w.example.com\" is not an https:// URL",
		"server: {oauth: {resource: 'https://w.example.com', issuers: [{issuer: 'https://idp'}]}}":                                                                                "server.oauth.issuers[0].jwks_url: is required",
		"server: {oauth: {resource: 'https://w.example.com', issuers: [{jwks_url: 'https://idp/jwks'}]}}":                                                                         "server.oauth.issuers[0].issuer: is required",
		"server: {oauth: {resource: 'https://w.example.com', issuers: [{issuer: 'https://idp', jwks_url: 'http://idp/jwks'}]}}":                                                   "server.oauth.issuers[0].jwks_url: \"http://idp/jwks\": plain http:// is allowed only for loopback hosts",
		"server: {oauth: {resource: 'https://w.example.com', issuers: [{issuer: 'https://idp', jwks_url: 'https://idp/j'}, {issuer: 'https://idp', jwks_url: 'https://idp/k'}]}}": "server.oauth.issuers[1].issuer: \"https://idp\" is listed twice",
		"server: {oauth: {resource: 'https://w.example.com', issuers: [{issuer: 'https://idp', jwks_url: 'https://idp/j', extra: 1}]}}":                                           "extra",
		"server: {oauth: {clock_skew: -1s}}":                                                                                                                                      "server.oauth.clock_skew: must be between 0s and 10m0s",
		"server: {oauth: {clock_skew: 1h}}":                                                                                                                                       "server.oauth.clock_skew: must be between 0s and 10m0s",
		"server: {oauth: {jwks_refresh_min: 10ms}}":                                                                                                                               "server.oauth.jwks_refresh_min: must be between 1s and 24h0m0s",
		"server: {oauth: {resource: 'https://w.example.com', " + issuer + ", scopes: ['a b']}}":                                                                                   "server.oauth.scopes: \"a b\" is not an OAuth scope",
		"tools: {scopes: {fs_read: []}}":                                                                                                                                          "tools.scopes.fs_read: lists no scope",
		"tools: {scopes: {fs_read: ['x\"y']}}":                                                                                                                                    "tools.scopes.fs_read: \"x\\\"y\" is not an OAuth scope",
		"tools: {scopes: {'[': [a]}}":                                                                                                                                             "tools.scopes.[: \"[\" is not a tool name or pattern",
	} {
		_, err := Load(writeConfig(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n error %v\n want it to contain %q", body, err, want)
		}
	}
}
