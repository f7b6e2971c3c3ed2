package config

import (
	"strings"
	"testing"
)

func TestConsoleConfig(t *testing.T) {
	c, err := Load(writeConfig(t, `
server:
  console: true
  console_login:
    issuer: https://idp.example.com/realms/team
    client_id: warden
    redirect_url: https://Warden.example.com/console/oidc/callback
    admin_subjects: [alice]
    admin_groups: [platform]
`))
	if err != nil {
		t.Fatal(err)
	}
	l := c.Server.ConsoleLogin
	if !c.Server.Console || !l.Enabled() || l.GroupsClaim != "groups" || l.ConsoleHost() != "warden.example.com" || len(l.AdminSubjects) != 1 || len(l.AdminGroups) != 1 {
		t.Errorf("server.console %v, console_login %+v (host %q)", c.Server.Console, l, l.ConsoleHost())
	}
	// Off by default, and the client secret may come from the environment.
	t.Setenv("WARDEN_SERVER_CONSOLE_LOGIN_CLIENT_SECRET", "from-env")
	c, err = Load(writeConfig(t, "log: {level: info}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Console || c.Server.ConsoleLogin.ClientSecret != "from-env" {
		t.Errorf("defaults: console %v, secret %q", c.Server.Console, c.Server.ConsoleLogin.ClientSecret)
	}
}

func TestConsoleConfigInvalid(t *testing.T) {
	const login = "issuer: 'https://idp.example.com', client_id: w, redirect_url: 'https://w.example.com/console/oidc/callback'"
	for body, want := range map[string]string{
		"server: {console_login: {" + login + "}}": "server.console_login: is set but server.console is not",
		"server: {console: true, console_login: {client_id: w, redirect_url: 'https://w.example.com/console/oidc/callback'}}":                       "server.console_login.issuer: is required",
		"server: {console: true, console_login: {issuer: 'https://idp.example.com', redirect_url: 'https://w/console/oidc/callback'}}":              "server.console_login.client_id: is required",
		"server: {console: true, console_login: {issuer: 'https://idp.example.com', client_id: w}}":                                                 "server.console_login.redirect_url: is required",
		"server: {console: true, console_login: {issuer: 'http://idp.example.com', client_id: w, redirect_url: 'https://w/console/oidc/callback'}}": "server.console_login.issuer: \"http://idp.example.com\": plain http:// is allowed only for loopback hosts",
		"server: {console: true, console_login: {issuer: 'https://idp', client_id: w, redirect_url: 'https://w.example.com/callback'}}":             "server.console_login.redirect_url: must end in /console/oidc/callback",
		"server: {console: true, console_login: {issuer: 'https://idp', client_id: w, redirect_url: 'http://w.example.com/console/oidc/callback'}}": "plain http:// is allowed only for loopback hosts",
		"server: {console: true, console_login: {" + login + ", groups_claim: ' roles'}}":                                                           "server.console_login.groups_claim: \" roles\" has surrounding spaces",
		"server: {console: true, console_login: {" + login + ", admin_groups: ['ops', ' x']}}":                                                      "server.console_login.admin_groups: \" x\" is not a group name",
		"server: {console: true, console_login: {" + login + ", admin_subjects: ['']}}":                                                             "server.console_login.admin_subjects: \"\" is not a subject",
		"server: {console: true, console_login: {" + login + ", admins: [ops]}}":                                                                    "server.console_login.admins: is replaced by admin_subjects (ID token subjects) and admin_groups (group names)",
		"server: {console: yes-please}":                                     "server.console",
		"server: {console: true, console_login: {" + login + ", extra: 1}}": "extra",
	} {
		_, err := Load(writeConfig(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n error %v\n want it to contain %q", body, err, want)
		}
	}
}
