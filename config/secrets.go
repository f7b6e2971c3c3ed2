package config

import (
	"path/filepath"
	"strings"

	"github.com/warden-run/warden/internal/capsyntax"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/secrets"
	"github.com/warden-run/warden/tool"
)

// Secret is one entry of secrets: where a value is kept (exactly one of
// File, Keyring and Env) and the tools that may read it through warden.env
// under the entry's name. config.yaml holds the reference, never the value.
type Secret struct {
	File    string   `mapstructure:"file"`
	Keyring string   `mapstructure:"keyring"`
	Env     string   `mapstructure:"env"`
	Tools   []string `mapstructure:"tools"`
}

// Source is where s's value is read, a relative file resolved against dir
// (the config file's directory).
func (s Secret) Source(dir string) secrets.Source {
	switch {
	case s.File != "":
		path := s.File
		if !filepath.IsAbs(path) && dir != "" {
			path = filepath.Join(dir, path)
		}
		return secrets.Source{Kind: secrets.File, Ref: path}
	case s.Keyring != "":
		return secrets.Source{Kind: secrets.Keyring, Ref: s.Keyring}
	default:
		return secrets.Source{Kind: secrets.Env, Ref: s.Env}
	}
}

// SecretSource is where the secret name is read (see Secret.Source).
func (c *Config) SecretSource(name string) secrets.Source {
	return c.Secrets[configkey.Fold(name)].Source(c.Dir)
}

// SecretReaders maps each tool (config.ToolKey) that may read the secret
// name to the module that must serve it: the module its grant entry is
// bound to (GrantModule), else the module named like the tool, as for a
// grant. A module serving a tool of a bound name is not that tool.
func (c *Config) SecretReaders(name string) map[string]string {
	s, ok := c.Secrets[configkey.Fold(name)]
	if !ok {
		return nil
	}
	readers := make(map[string]string, len(s.Tools))
	for _, t := range s.Tools {
		key := ToolKey(t)
		module, _, ok := c.GrantModule(key)
		if !ok {
			module = key
		}
		readers[key] = module
	}
	return readers
}

// SecretWhere is where the secret name's tools list is written (or the
// entry, when it has none): "config.yaml:12", a WARDEN_* variable, or ""
// for a Config built in code. Refusals name it: it is the line that would
// allow a tool.
func (c *Config) SecretWhere(name string) string {
	key := "secrets." + configkey.Fold(name)
	if len(c.Secrets[configkey.Fold(name)].Tools) > 0 {
		key += ".tools"
	}
	return c.locator()(key, "").at
}

// validateSecrets adds a problem for each secrets entry that is not one
// source bound to valid tool names. The messages name sources, never
// values (config.yaml holds none).
func (c *Config) validateSecrets(fail func(key, format string, args ...any)) {
	for _, name := range sortedKeys(c.Secrets) {
		s := c.Secrets[name]
		at := "secrets." + name
		set := 0
		for _, v := range []string{s.File, s.Keyring, s.Env} {
			if v != "" {
				set++
			}
		}
		switch {
		case !capsyntax.ValidEnvKey(name):
			fail(at, "a secret's name must be A-Z a-z 0-9 _ and not start with a digit: tools read it with warden.env")
		case configkey.IsEnv(name):
			fail(at, "a WARDEN_* name is warden's own configuration; name the secret otherwise")
		case hasFoldedKey(c.Env.Values, name):
			fail(at, "env.values has a key of the same name: a tool reading %s would not know which it gets; rename one", name)
		case set != 1:
			fail(at, "set exactly one of file, keyring or env")
		case strings.ContainsRune(s.File, 0):
			fail(at+".file", "the path holds a NUL byte")
		case s.Env != "" && !capsyntax.ValidEnvKey(s.Env):
			// Not quoted: a value pasted into the wrong field is still a secret.
			fail(at+".env", "is not a variable name (A-Z a-z 0-9 _, not starting with a digit)")
		case s.Env != "" && wardenSetting(s.Env) != "":
			fail(at+".env", "%s is one of warden's own %s settings; a tool is never given warden's configuration", s.Env, wardenSetting(s.Env))
		case s.Keyring != "" && !ValidSecretName(s.Keyring):
			fail(at+".keyring", "is not a keyring entry name (%s)", SecretNameRule)
		}
		for _, t := range s.Tools {
			if !tool.ValidName(t) {
				fail(at+".tools", "%q is not a tool name (%s)", t, tool.NameRule)
			}
		}
	}
}

// SecretNameRule says in words what ValidSecretName accepts.
const SecretNameRule = "1-128 characters of A-Z a-z 0-9 _ - ., starting with a letter or digit"

// ValidSecretName reports whether name may name a keyring entry (warden
// secret set NAME, secrets.<x>.keyring): the rule of tool names, so that
// it is safe in a command line, a message and every OS's keyring.
func ValidSecretName(name string) bool { return tool.ValidName(name) }

func hasFoldedKey[V any](m map[string]V, name string) bool {
	for k := range m {
		if configkey.Fold(k) == configkey.Fold(name) {
			return true
		}
	}
	return false
}
