package config

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
)

const testOAuth = `server:
  oauth:
    resource: https://warden.example.com/mcp
    issuers:
      - {issuer: https://id.example.com, jwks_url: https://id.example.com/jwks}
`

// TestAccessRefused: each mistake in access.*, server.icons and the new
// server.oauth and server.rate_limit keys is refused where it is written.
func TestAccessRefused(t *testing.T) {
	two := testOAuth + "      - {issuer: https://other.example.com, jwks_url: https://other.example.com/jwks}\n"
	cases := map[string]string{
		"access: {roles: {devs: {groups: [devs]}}}":                                                     "access.roles: apply to OAuth principals only, and server.oauth is not configured",
		testOAuth + "access: {roles: {devs: {approve: [x]}}}":                                           "access.roles.devs: names no subject and no group",
		two + "access: {roles: {devs: {groups: [devs]}}}":                                               "access.roles.devs.issuer: is required while server.oauth lists 2 issuers",
		testOAuth + "access: {roles: {devs: {issuer: https://evil.example.com, groups: [devs]}}}":       `access.roles.devs.issuer: "https://evil.example.com" is not one of server.oauth.issuers`,
		testOAuth + "access: {roles: {devs: {groups: [\"a\\u200db\"]}}}":                                `access.roles.devs.groups: "a\u200db" holds the control or invisible character U+200D`,
		testOAuth + "access: {roles: {devs: {subjects: [\"\"]}}}":                                       "access.roles.devs.subjects: an empty name",
		testOAuth + "access: {roles: {devs: {groups: [d], grants: {x: {env: [WARDEN_SERVER_TOKEN]}}}}}": `access.roles.devs.grants.x.env: "WARDEN_SERVER_TOKEN" is warden's own configuration`,
		testOAuth + "access: {roles: {devs: {groups: [d], grants: {x: {module: y}}}}}":                  "access.roles.devs.grants.x: a role's grant lists capabilities only",
		testOAuth + "access: {roles: {devs: {groups: [d], grants: {x: {memory: all}}}}}":                "access.roles.devs.grants.x.memory: must be read or read-write",
		testOAuth + "access: {roles: {devs: {groups: [d], grants: {x: {net: [\"http://\"]}}}}}":         "access.roles.devs.grants.x.net",
		testOAuth + "access: {roles: {devs: {groups: [d], approve: [\"[z-a]\"]}}}":                      `access.roles.devs.approve: "[z-a]" is not a tool name or pattern`,
		testOAuth + "access: {roles: {devs: {groups: [d], rate_limit: {rate: fast}}}}":                  "access.roles.devs.rate_limit.rate",
		"access: {rate_limit: {rate: 1/s, burst: -1}}":                                                  "access.rate_limit.burst: must not be negative",
		"server: {rate_limit: {on_backend_error: ignore}}":                                              `server.rate_limit.on_backend_error: must be refuse or local, got "ignore"`,
		"server: {oauth: {groups_claim: \"\"}}":                                                         "server.oauth.groups_claim: names the claim that lists a token's groups: an empty name",
		"server: {icons: [{src: \"javascript:alert(1)\"}]}":                                             `server.icons[0]: src: "javascript:alert(1)" is not an https:// URL`,
		"server: {icons: [{src: \"http://example.com/i.png\"}]}":                                        "is not an https:// URL",
		"server: {icons: [{src: \"data:text/html;base64,PHA+\"}]}":                                      "src: a data: URI must be data:<image/png|image/jpeg|image/svg+xml|image/webp>;base64,...",
		"server: {icons: [{src: \"https://e.com/i.png\", mime_type: image/gif}]}":                       `mime_type: "image/gif" is not one of`,
		"server: {icons: [{src: \"https://e.com/i.png\", sizes: [big]}]}":                               `sizes: "big" is not WxH`,
		"server: {icons: [{src: \"https://e.com/i.png\", theme: neon}]}":                                `theme: "neon" is not light or dark`,
		"server: {icons: [{src: \"https://e.com/a b.png\"}]}":                                           "src: holds the space, control or invisible character U+0020",
		"server: {icons: [{src: \"data:image/png;base64,AA\", mime_type: image/jpeg}]}":                 `mime_type "image/jpeg" is not the data: URI's type "image/png"`,
	}
	cases[testOAuth+"access: {roles: {devs: {groups: [d], grants: {x: {lsp: [cobol]}}}}}"] = `access.roles.devs.grants.x.lsp: no language "cobol" in lsp.languages`
	cases["access: {rate_limit: {rate: 0.5/h}}"] = `access.rate_limit.rate: "0.5/h" is less than one call an hour (1/h), the least rate a bucket takes`
	cases["access: {rate_limit: {rate: 1e-300/h}}"] = `access.rate_limit.rate: "1e-300/h" is less than one call an hour`
	cases["server: {rate_limit: {per_client: {rate: 1e300/s}}}"] = `server.rate_limit.per_client.rate: "1e300/s" is more than 1e+06 calls a second`
	cases["tools: {limits: {x: {rate: 1/s, burst: 1000001}}}"] = "tools.limits.x.burst: must be at most 1000000, got 1000001"
	cases[testOAuth+"access: {roles: {devs: {groups: [d], rate_limit: {rate: 1/s, burst: 9999999999}}}}"] = "access.roles.devs.rate_limit.burst: must be at most 1000000"
	cases[testOAuth+"access: {widen: true, roles: {devs: {groups: [d], grants: {x: {env: [HOME]}}}}}"] = "access.roles.devs.grants.x: widens tools.grants.x (access.widen: true), which config does not have"
	cases["server: {discovery: {enabled: true, name: io.example/w, url: \"https://warden.example.com/\"}}"] = `server.discovery.url: "https://warden.example.com/" does not end in /mcp, warden's streamable-HTTP path`
	cases[strings.Replace(testOAuth, "/mcp\n", "/api\n", 1)+"  discovery: {enabled: true, name: io.example/w}\n"] = `server.oauth.resource: "https://warden.example.com/api" does not end in /mcp`
	cases[testOAuth+"access: {roles: {devs: {groups: [d], memory_resources: 7}}}"] = `access.roles.devs.memory_resources: must be false (no memory:// resource), true (no cap) or a list of topics, got "7"`
	cases[testOAuth+"access: {roles: {devs: {groups: [d], memory_resources: [arch, {a: b}]}}}"] = `access.roles.devs.memory_resources: lists "map[a:b]", which is not a topic`
	cases[testOAuth+"access: {roles: {devs: {groups: [d], memory_resources: [\"../up\"]}}}"] = `access.roles.devs.memory_resources: topic "../up": component ".." starts with '.'`
	cases["server: {discovery: {name: warden}}"] = `server.discovery.name: "warden" is not a server name in reverse-DNS form`
	cases["server: {discovery: {description: \"\"}}"] = "server.discovery.description: must be 1 to 100 characters, got 0"
	cases["server: {discovery: {url: \"http://warden.example.com/mcp\"}}"] = "server.discovery.url: "
	cases["server: {discovery: {website_url: \"javascript:x\"}}"] = "server.discovery.website_url: "
	for body, want := range cases {
		path := writeConfig(t, body)
		_, err := Load(path)
		if err == nil {
			t.Errorf("%s: loaded", body)
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s:\n error %q\n want it to contain %q and the file name", body, err, want)
		}
	}
}

// TestAccessLoads: a full access section loads as written: role names
// folded like every key, subjects and groups kept byte for byte; a
// widening role's grant of Files widens the entry files (names folded).
func TestAccessLoads(t *testing.T) {
	path := writeConfig(t, testOAuth+`  icons:
    - {src: "https://warden.example.com/icon.png", mime_type: image/png, sizes: [48x48, any], theme: dark}
    - {src: "data:image/svg+xml;base64,PHN2Zz4=", mime_type: image/svg+xml}
  rate_limit: {on_backend_error: local}
tools:
  grants: {files: {fs: {read: [docs]}}}
access:
  widen: true
  rate_limit: {rate: 5/s}
  roles:
    Devs:
      subjects: [Alice@Example.com]
      groups: [Dev Team, café]
      grants: {Files: {fs: {read: [src]}}}
      approve: [deploy_*]
`)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := c.Access.Roles["devs"]
	if !ok || !c.Access.Widen || r.Subjects[0] != "Alice@Example.com" || r.Groups[0] != "Dev Team" || r.Groups[1] != "café" {
		t.Fatalf("access %+v", c.Access)
	}
	if g, ok := r.RoleGrant("files"); !ok || g.FS.Read[0] != "src" {
		t.Errorf("role grant of files %+v %v", g, ok)
	}
	if c.Server.RateLimit.OnBackendError != "local" || c.Server.OAuth.GroupsClaim != "groups" {
		t.Errorf("on_backend_error %q groups_claim %q", c.Server.RateLimit.OnBackendError, c.Server.OAuth.GroupsClaim)
	}
	if icons := c.ServerIcons(); len(icons) != 2 || icons[0].Theme != "dark" || icons[0].Sizes[1] != "any" {
		t.Errorf("icons %+v", icons)
	}
	if !MatchTool("deploy_*", "deploy_prod") || MatchTool("deploy_*", "undeploy") {
		t.Error("MatchTool")
	}
}

// FuzzCheckIcon: whatever the source, an accepted icon is https:// or a
// data:image URI and holds no space, control or invisible character.
func FuzzCheckIcon(f *testing.F) {
	for _, s := range []string{"https://e.com/i.png", "data:image/png;base64,AA", "javascript:x", "https://e.com/\u202e", "HTTPS://E.COM/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if CheckIcon(Icon{Src: src}) != nil {
			return
		}
		if !strings.HasPrefix(src, "https://") && !strings.HasPrefix(src, "data:image/") {
			t.Fatalf("accepted %q", src)
		}
		if strings.ContainsAny(src, " \t\r\n\x00\u200d\u202e") {
			t.Fatalf("accepted %q", src)
		}
	})
}

// TestRequireGroupsClaim: a token must carry its groups claim whenever a
// role lists groups, unless server.oauth.require_groups_claim says
// otherwise; roles of subjects only do not need it.
func TestRequireGroupsClaim(t *testing.T) {
	for body, want := range map[string]bool{
		testOAuth: false,
		testOAuth + "access: {roles: {devs: {subjects: [alice]}}}":                                                                               false,
		testOAuth + "access: {roles: {devs: {groups: [devs]}}}":                                                                                  true,
		strings.Replace(testOAuth, "  oauth:\n", "  oauth:\n    require_groups_claim: false\n", 1) + "access: {roles: {devs: {groups: [devs]}}}": false,
		strings.Replace(testOAuth, "  oauth:\n", "  oauth:\n    require_groups_claim: true\n", 1):                                                true,
	} {
		c, err := Load(writeConfig(t, body))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.RequireGroupsClaim(); got != want {
			t.Errorf("%s: require %v, want %v", body, got, want)
		}
	}
}

// TestReloadKeepsRolesOnTheVerifiersIssuers: the token verifier reads
// server.oauth at start; a reload that would bind access.roles to issuers
// it does not verify, or change whether a token must carry its groups
// claim, is refused with the reason and the previous config stays in
// force. A reload that changes neither applies.
func TestReloadKeepsRolesOnTheVerifiersIssuers(t *testing.T) {
	const roles = "access: {roles: {devs: {subjects: [alice]}}}\n"
	other := strings.ReplaceAll(testOAuth, "id.example.com", "other.example.com")
	path := writeConfig(t, testOAuth+roles)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	live := NewLive(c, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	for body, want := range map[string]string{
		other + roles: `server.oauth.issuers changed (["https://other.example.com"], warden serve started with ["https://id.example.com"]), ` +
			"and access.roles bind to the issuers tokens are verified against, which are read at start: restart warden serve to apply it; the previous config stays in force",
		testOAuth + "access: {roles: {devs: {groups: [devs]}}}\n": "server.oauth.require_groups_claim would be true (unset, it is on whenever access.roles list groups), " +
			"and warden serve started with false: tokens are verified as at start, so restart warden serve to apply it; the previous config stays in force",
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		err := live.Reload()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: reload error %v\nwant %s", body, err, want)
		}
		if live.Current() != c {
			t.Errorf("%s: the refused config is in force", body)
		}
	}
	// Without roles the issuers may change (with the start-only warning).
	if err := os.WriteFile(path, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := live.Reload(); err != nil {
		t.Errorf("issuers changed, no roles: %v", err)
	}
	// ...but roles added afterwards still bind to the start's issuers.
	if err := os.WriteFile(path, []byte(other+roles), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := live.Reload(); err == nil || !strings.Contains(err.Error(), "server.oauth.issuers changed") {
		t.Errorf("roles bound to an issuer not verified: %v", err)
	}
	if err := os.WriteFile(path, []byte(testOAuth+"access: {roles: {devs: {subjects: [bob]}}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := live.Reload(); err != nil || live.Current().Access.Roles["devs"].Subjects[0] != "bob" {
		t.Errorf("a role's subjects changed: %v", err)
	}
}
