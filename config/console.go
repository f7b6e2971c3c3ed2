package config

import (
	"net/url"
	"strings"
)

// ConsolePath is where `warden serve --http` mounts the console
// (server.console) beside /mcp.
const ConsolePath = "/console/"

// ConsoleLogin is server.console_login: the OpenID Connect login of the
// console on a team server (docs/console.md). Without it the console opens
// sessions only from one-time links printed on the terminal, which serve
// allows on a loopback address only.
type ConsoleLogin struct {
	// Issuer is the OpenID provider (its discovery document is
	// Issuer/.well-known/openid-configuration).
	Issuer string `mapstructure:"issuer"`
	// ClientID and ClientSecret are the console's client registration at
	// the provider (the secret may come from the environment:
	// WARDEN_SERVER_CONSOLE_LOGIN_CLIENT_SECRET).
	ClientID     string `mapstructure:"client_id"`
	ClientSecret string `mapstructure:"client_secret"`
	// RedirectURL is the callback registered with the provider:
	// https://HOST/console/oidc/callback.
	RedirectURL string `mapstructure:"redirect_url"`
	// GroupsClaim is the ID token claim naming the person's groups, which
	// approver rights follow (default "groups").
	GroupsClaim string `mapstructure:"groups_claim"`
	// AdminSubjects (ID token subjects at Issuer) and AdminGroups (names
	// in GroupsClaim) may change grants and install modules in the
	// console; anyone else who logs in may look and answer the questions
	// they are an approver of. None: nobody may. Kept apart so that a
	// group named like an admin's subject grants nothing.
	AdminSubjects []string `mapstructure:"admin_subjects"`
	AdminGroups   []string `mapstructure:"admin_groups"`
	// Admins was one list matching a subject or a group; it is refused
	// with a message naming the two keys that replace it.
	Admins []string `mapstructure:"admins"`
}

// Enabled reports whether the OpenID Connect login is configured.
func (l ConsoleLogin) Enabled() bool {
	return l.Issuer != "" || l.ClientID != "" || l.RedirectURL != ""
}

// ConsoleHost is the host name people reach the console at, from the
// login's redirect URL ("" without a login): the console's Host check
// allows it besides the loopback names.
func (l ConsoleLogin) ConsoleHost() string {
	u, err := url.Parse(l.RedirectURL)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

func (c *Config) validateConsole(fail func(key, format string, args ...any)) {
	l := c.Server.ConsoleLogin
	if !l.Enabled() {
		return
	}
	if !c.Server.Console {
		fail("server.console_login", "is set but server.console is not: set server.console: true to serve the console, or remove the login")
	}
	if l.Issuer == "" {
		fail("server.console_login.issuer", "is required: the OpenID provider's issuer URL")
	} else if err := checkHTTPSURL(l.Issuer, false); err != nil {
		fail("server.console_login.issuer", "%v", err)
	}
	if l.ClientID == "" {
		fail("server.console_login.client_id", "is required: the console's client id at the provider")
	}
	if l.RedirectURL == "" {
		fail("server.console_login.redirect_url", "is required: the callback registered with the provider, https://HOST%soidc/callback", ConsolePath)
	} else if err := checkHTTPSURL(l.RedirectURL, false); err != nil {
		fail("server.console_login.redirect_url", "%v", err)
	} else if u, _ := url.Parse(l.RedirectURL); u.Path != ConsolePath+"oidc/callback" {
		fail("server.console_login.redirect_url", "must end in %soidc/callback (the console's callback), got path %q", ConsolePath, u.Path)
	}
	if len(l.Admins) > 0 {
		fail("server.console_login.admins", "is replaced by admin_subjects (ID token subjects) and admin_groups (group names): "+
			"one list matched a name as either, so a group named like an admin's subject made its members admins; move each entry to the key it means")
	}
	for _, a := range l.AdminSubjects {
		if strings.TrimSpace(a) != a || a == "" {
			fail("server.console_login.admin_subjects", "%q is not a subject (empty, or surrounding spaces)", a)
		}
	}
	for _, a := range l.AdminGroups {
		if strings.TrimSpace(a) != a || a == "" {
			fail("server.console_login.admin_groups", "%q is not a group name (empty, or surrounding spaces)", a)
		}
	}
	if strings.TrimSpace(l.GroupsClaim) != l.GroupsClaim {
		fail("server.console_login.groups_claim", "%q has surrounding spaces", l.GroupsClaim)
	}
}
