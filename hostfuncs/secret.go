package hostfuncs

import (
	"encoding/json"
	"log/slog"
	"os"

	"github.com/warden-run/warden/internal/secrets"
)

// SecretValue is where a configured value comes from: the literal Value, or
// the host environment variable FromEnv, read each time it is looked up.
// Exactly one is set. env.values and a tool's own config
// (tools.grants.<tool>.config) hold them.
//
// A SecretValue prints as "[redacted]" (or "from_env:NAME") in fmt, slog and
// JSON alike, so that logging a config can never leak a secret.
type SecretValue struct {
	Value   string
	FromEnv string
}

const redacted = "[redacted]"

func (v SecretValue) String() string { return v.describe() }

// GoString keeps %#v from printing the fields.
func (v SecretValue) GoString() string { return v.describe() }

// LogValue keeps slog from printing the fields.
func (v SecretValue) LogValue() slog.Value { return slog.StringValue(v.describe()) }

// MarshalJSON keeps JSON encoders, slog's JSON handler among them, from
// printing the fields. A SecretValue is never meant to be serialized.
func (v SecretValue) MarshalJSON() ([]byte, error) { return json.Marshal(v.describe()) }

func (v SecretValue) describe() string {
	if v.FromEnv != "" {
		return "from_env:" + v.FromEnv
	}
	return redacted
}

// Lookup returns the value: the literal, or the host variable's current
// value (ok is false when it is unset).
func (v SecretValue) Lookup() (string, bool) {
	if v.FromEnv != "" {
		return os.LookupEnv(v.FromEnv)
	}
	return v.Value, true
}

// Secret is one entry of config's secrets: as the tool called sees it,
// resolved by the tool's policy (internal/policy) once per config load:
// where its value is read at each get, so that a rotated value is the
// next get's, whether it is bound to the tool, and where config binds it.
// It holds no value. warden.env reads a secret only when both the call's
// Secret and the policy in force now let the tool read it.
type Secret struct {
	Source secrets.Source
	// Module is the module that must serve the tool for it to read the
	// secret (the module its grant entry is bound to, else the one named
	// like the tool: config.Config.SecretReaders), "" when the secret's
	// tools list does not name the tool.
	Module string
	// Where is where config binds it ("config.yaml:12"), named in
	// refusals and read errors.
	Where string
}

// ReadableBy reports whether the tool, served by module, may read s.
func (s Secret) ReadableBy(module string) bool { return s.Module != "" && s.Module == module }
