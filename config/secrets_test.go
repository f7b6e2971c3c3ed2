package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/secrets"
)

// TestSecrets: a secrets entry names one source and the tools bound to it;
// the readers are the modules those tools' grants are bound to; the config
// line named in refusals is the entry's tools list.
func TestSecrets(t *testing.T) {
	path := writeConfig(t, `tools:
  grants:
    gh: {module: github-tools}
secrets:
  DEPLOY_KEY:
    file: keys/deploy
    tools: [gh, Echo]
  RING: {keyring: api-token}
  HOST:
    env: GH_TOKEN
    tools: [gh]
`)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.SecretSource("deploy_key"); got != (secrets.Source{Kind: secrets.File, Ref: filepath.Join(filepath.Dir(path), "keys/deploy")}) {
		t.Errorf("file source %v: a relative path is the config directory's", got)
	}
	if got := c.SecretSource("RING"); got != (secrets.Source{Kind: secrets.Keyring, Ref: "api-token"}) {
		t.Errorf("keyring source %v", got)
	}
	if got := c.SecretSource("host"); got != (secrets.Source{Kind: secrets.Env, Ref: "GH_TOKEN"}) {
		t.Errorf("env source %v", got)
	}
	if got := c.SecretReaders("deploy_key"); len(got) != 2 || got["gh"] != "github-tools" || got["echo"] != "echo" {
		t.Errorf("readers %v: gh's grant is bound to github-tools, echo has no entry", got)
	}
	if got := c.SecretReaders("ring"); len(got) != 0 {
		t.Errorf("an entry with no tools has readers %v", got)
	}
	base := filepath.Base(path)
	for name, want := range map[string]string{"deploy_key": base + ":7", "ring": base + ":8", "host": base + ":11"} {
		if got := c.SecretWhere(name); !strings.HasSuffix(got, want) {
			t.Errorf("SecretWhere(%s) = %q, want …%s", name, got, want)
		}
	}
}

// TestSecretsInvalid: every malformed entry is refused at its line,
// naming the source field, never quoting what an env field holds (a value
// pasted there by mistake is still a secret).
func TestSecretsInvalid(t *testing.T) {
	const pasted = "ghp_Hunter2Secret9f3a"
	path := writeConfig(t, `env:
  values:
    CLASH: {value: x}
secrets:
  CLASH: {env: X}
  NONE: {tools: [a]}
  TWO: {env: X, file: /run/secrets/x}
  warden_token: {env: X}
  9lives: {env: X}
  PASTED: {env: "`+pasted+`=1"}
  OWN: {env: WARDEN_SERVER_TOKEN}
  RING: {keyring: "a b"}
  BADTOOL: {env: X, tools: ["no tool"]}
`)
	_, err := Load(path)
	if err == nil {
		t.Fatal("loaded")
	}
	base := filepath.Base(path)
	for _, want := range []string{
		base + ":5: secrets.clash: env.values has a key of the same name: a tool reading clash would not know which it gets; rename one",
		base + ":6: secrets.none: set exactly one of file, keyring or env",
		base + ":7: secrets.two: set exactly one of file, keyring or env",
		base + ":8: secrets.warden_token: a WARDEN_* name is warden's own configuration; name the secret otherwise",
		base + ":9: secrets.9lives: a secret's name must be A-Z a-z 0-9 _ and not start with a digit: tools read it with warden.env",
		base + ":10: secrets.pasted.env: is not a variable name (A-Z a-z 0-9 _, not starting with a digit)",
		base + ":11: secrets.own.env: WARDEN_SERVER_TOKEN is one of warden's own server.* settings; a tool is never given warden's configuration",
		base + `:12: secrets.ring.keyring: is not a keyring entry name (1-128 characters of A-Z a-z 0-9 _ - ., starting with a letter or digit)`,
		base + `:13: secrets.badtool.tools: "no tool" is not a tool name`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), pasted) {
		t.Errorf("the error quotes the env field:\n%v", err)
	}
}

// FuzzSecretsValidate: any secrets entry validates without panicking, and
// an env field holding a pasted NAME=value is never quoted back.
func FuzzSecretsValidate(f *testing.F) {
	f.Add("DEPLOY_KEY", "", "/run/secrets/x", "", "deploy")
	f.Add("TOKEN", "GH_TOKEN=ghp_s3cret", "", "", "gh")
	f.Add("warden_x", "", "", "entry", "a b")
	f.Fuzz(func(t *testing.T, name, env, file, ring, toolName string) {
		c := &Config{Secrets: map[string]Secret{name: {Env: env, File: file, Keyring: ring, Tools: []string{toolName}}}}
		var msgs []string
		c.validateSecrets(func(key, format string, args ...any) { msgs = append(msgs, key+": "+fmt.Sprintf(format, args...)) })
		// (Unless another field holds the same text, which may be shown.)
		if i := strings.IndexByte(env, '='); i >= 0 && len(env)-i > 8 && !strings.Contains(name+"\x00"+file+"\x00"+ring+"\x00"+toolName, env[i:]) {
			for _, m := range msgs {
				if strings.Contains(m, env[i:]) {
					t.Fatalf("the env field's value is quoted: %s", m)
				}
			}
		}
	})
}
