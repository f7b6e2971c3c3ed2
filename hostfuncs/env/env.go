package env

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/capsyntax"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/secrets"
	"github.com/warden-run/warden/tool"
)

// Value is where one key's value comes from (see hostfuncs.SecretValue:
// it never prints its content).
type Value = hostfuncs.SecretValue

// Config maps each key a tool may be granted to its Value. The secrets
// (config's secrets:) are not here: each call carries them as its tool's
// policy resolved them when the call was admitted (hostfuncs.Call.Secrets),
// bindings and all, as it carries its grants.
type Config struct {
	Values map[string]Value
	// Read, when set, hears every secret value read, before a tool gets
	// it: warden's logs learn to redact a rotated value (redact.Secrets).
	Read func(value string)
	// Secrets, when set, returns config's secrets as the policy in force
	// now resolves them for the tool called name (policy.Policy.Secrets).
	// A get reads a secret only when both the call's view and this one
	// let the tool read it, from the source config names now: a reload
	// that revokes a binding refuses the next get, even of a call that
	// runs on (an MCP task may run for minutes), and one that binds it
	// applies from the next call. Unset, the call's view alone decides.
	Secrets func(name string) map[string]hostfuncs.Secret
}

// Validate reports every problem in c, naming keys, never values.
func (c Config) Validate() error {
	var errs []error
	seen := map[string]string{}
	for _, key := range sortedKeys(c.Values) {
		v := c.Values[key]
		if !validKey(key) {
			errs = append(errs, fmt.Errorf("env.values.%s: key must be A-Z a-z 0-9 _ and not start with a digit", key))
		} else if IsWardenKey(key) {
			errs = append(errs, fmt.Errorf("env.values.%s: a WARDEN_* key is warden's own configuration and can never be granted to a tool; name it otherwise", key))
		}
		if other, dup := seen[foldKey(key)]; dup {
			errs = append(errs, fmt.Errorf("env.values.%s: same key as %s (keys are case-insensitive)", key, other))
		}
		seen[foldKey(key)] = key
		switch {
		case (v.Value == "") == (v.FromEnv == ""):
			errs = append(errs, fmt.Errorf("env.values.%s: set exactly one of value or from_env", key))
		case v.FromEnv != "" && (strings.ContainsAny(v.FromEnv, "=\x00")):
			// Not quoted: a value pasted into the wrong field is still a secret.
			errs = append(errs, fmt.Errorf("env.values.%s: from_env is not a variable name (it contains = or NUL)", key))
		}
	}
	return errors.Join(errs...)
}

func validKey(key string) bool { return capsyntax.ValidEnvKey(key) }

func sortedKeys(m map[string]Value) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Env is the warden.env capability.
type Env struct {
	// values is keyed by upper-cased key.
	values atomic.Pointer[map[string]Value]
	// read is Config.Read.
	read atomic.Pointer[func(string)]
	// secrets is Config.Secrets.
	secrets atomic.Pointer[func(string) map[string]hostfuncs.Secret]
	logger  *slog.Logger
}

// New returns the capability for cfg. logger receives a debug line per
// request and an info line per denial, naming tools and keys only; nil
// discards them.
func New(cfg Config, logger *slog.Logger) (*Env, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	e := &Env{logger: logger}
	if err := e.SetConfig(cfg); err != nil {
		return nil, err
	}
	return e, nil
}

// SetConfig replaces the configuration; the next request uses it. An
// invalid cfg changes nothing.
func (e *Env) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	values := make(map[string]Value, len(cfg.Values))
	for k, v := range cfg.Values {
		values[foldKey(k)] = v
	}
	e.values.Store(&values)
	e.read.Store(&cfg.Read)
	e.secrets.Store(&cfg.Secrets)
	return nil
}

// liveSecrets is the secrets of call's tool as the policy in force now
// resolves them (Config.Secrets), the call's own view when unset.
func (e *Env) liveSecrets(call *hostfuncs.Call) map[string]hostfuncs.Secret {
	if f := *e.secrets.Load(); f != nil {
		return f(call.Tool)
	}
	return call.Secrets
}

// Name returns "env".
func (e *Env) Name() string { return "env" }

type request struct {
	Op  string `json:"op"`
	Key string `json:"key"`
}

type (
	getReply struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	listReply struct {
		Keys []string `json:"keys"`
	}
)

// Serve handles one warden.env request.
func (e *Env) Serve(ctx context.Context, call *hostfuncs.Call, raw []byte) (any, error) {
	req, decodeErr := decode(raw)
	live := e.liveSecrets(call)
	if decodeErr == nil && req.Op == "get" {
		if s, ok := call.Secrets[configkey.Fold(req.Key)]; ok {
			return e.serveSecret(call, req.Key, s, live)
		}
	}
	if err := gate(call, req, len(readable(call, live)) > 0); err != nil {
		e.logger.Info("env denied", "tool", call.Tool, "reason", err)
		return nil, err
	}
	if decodeErr != nil {
		return nil, decodeErr
	}
	values := *e.values.Load()
	if req.Op == "list" {
		keys := readable(call, live)
		for _, key := range call.Grants.Env {
			if _, ok := resolve(values, key); ok && ValidateKey(key) == nil &&
				!slices.ContainsFunc(keys, func(k string) bool { return foldKey(k) == foldKey(key) }) {
				keys = append(keys, key)
			}
		}
		sort.Strings(keys)
		e.logger.Debug("env list", "tool", call.Tool, "keys", len(keys))
		return listReply{Keys: keys}, nil
	}
	value, ok := resolve(values, req.Key)
	e.logger.Debug("env get", "tool", call.Tool, "key", req.Key, "found", ok)
	if !ok {
		return nil, tool.Errorf(tool.KindNotFound, "env: key %q has no value on this host (config key env.values.%[1]s)", req.Key)
	}
	return getReply{Key: req.Key, Value: value}, nil
}

// resolve returns key's value: the literal, or the host variable's current
// value. A host variable that is unset has no value.
func resolve(values map[string]Value, key string) (string, bool) {
	v, ok := values[foldKey(key)]
	if !ok {
		return "", false
	}
	return v.Lookup()
}

func decode(raw []byte) (*request, error) {
	var req request
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, tool.Errorf(tool.KindInvalidArguments, "env: bad request: %v", err)
	}
	if dec.More() {
		return nil, tool.Errorf(tool.KindInvalidArguments, "env: bad request: trailing data after the JSON object")
	}
	switch req.Op {
	case "get":
		if !validKey(req.Key) {
			return nil, tool.Errorf(tool.KindInvalidArguments, "env get: key %q must be A-Z a-z 0-9 _ and not start with a digit", req.Key)
		}
	case "list":
		if req.Key != "" {
			return nil, tool.Errorf(tool.KindInvalidArguments, "env list: takes no key")
		}
	default:
		return nil, tool.Errorf(tool.KindInvalidArguments, "env: unknown op %q (want get or list)", req.Op)
	}
	return &req, nil
}

// gate is the capability's one permission check: the tool needs an env
// grant (or a secret bound to it, hasSecrets), and a get needs a grant for
// its key (a secret's get is checked by serveSecret). Whether a key that is not
// granted has a value is never revealed. req is nil when the request did
// not decode; then only the presence of a grant is checked.
func gate(call *hostfuncs.Call, req *request, hasSecrets bool) error {
	if len(call.Grants.Env) == 0 && !hasSecrets && (req == nil || req.Op != "get") {
		return tool.Errorf(tool.KindDenied, "env: tool %q has no env grant (config key tools.grants.%[1]s.env)", call.Tool)
	}
	if req == nil || req.Op != "get" {
		return nil
	}
	if IsWardenKey(req.Key) {
		// Never offered (no Need): whatever config grants, config
		// validation refuses such a grant and this refuses the call.
		return tool.Errorf(tool.KindDenied, "env: key %q is warden's own configuration (WARDEN_*); no grant can give it to tool %q", req.Key, call.Tool)
	}
	if !slices.ContainsFunc(call.Grants.Env, func(k string) bool { return foldKey(k) == foldKey(req.Key) }) {
		return tool.DeniedFor(tool.Need{Key: "env", Value: req.Key},
			"env: key %q is not granted to tool %q (config key tools.grants.%[2]s.env)", req.Key, call.Tool)
	}
	return nil
}

// readable lists the secrets call's tool may read, upper-cased and
// sorted: those bound to it, while the module it is bound to serves it, in
// both the call's view and live, the view of the policy in force now.
func readable(call *hostfuncs.Call, live map[string]hostfuncs.Secret) []string {
	names := []string{}
	for name, s := range call.Secrets {
		if s.ReadableBy(call.Module) && live[name].ReadableBy(call.Module) {
			names = append(names, strings.ToUpper(name))
		}
	}
	sort.Strings(names)
	return names
}

// serveSecret answers a get of the secret key, s in the call's view: denied
// unless the secret is bound to the tool there and in live, the view of the
// policy in force now (the refusal names the config line that would allow
// it, and says when a reload during the call revoked it), else the value
// as its source, as config names it now, holds it now.
func (e *Env) serveSecret(call *hostfuncs.Call, key string, s hostfuncs.Secret, live map[string]hostfuncs.Secret) (any, error) {
	name := configkey.Fold(key)
	now, configured := live[name]
	var refused *tool.Error
	switch {
	case !s.ReadableBy(call.Module):
		refused = notReadable(call, key, s)
	case !configured:
		refused = tool.Errorf(tool.KindDenied, "env: secret %q is no longer in config (config key secrets.%s): a reload during this call removed it",
			key, strings.ToLower(key))
	case !now.ReadableBy(call.Module):
		refused = notReadable(call, key, now)
		refused.Message += "; a reload during this call revoked it"
	}
	if refused != nil {
		e.logger.Info("env denied", "tool", call.Tool, "reason", refused)
		return nil, refused
	}
	s = now
	where := ""
	if s.Where != "" {
		where = ", " + s.Where
	}
	value, err := s.Source.Read()
	e.logger.Debug("env get", "tool", call.Tool, "key", key, "secret", s.Source.String(), "found", err == nil)
	if err != nil {
		kind := tool.KindUnavailable
		if errors.Is(err, secrets.ErrNotFound) {
			kind = tool.KindNotFound
		}
		return nil, tool.Errorf(kind, "env: secret %q (%s, config key secrets.%s%s) cannot be read: %v", key, s.Source, strings.ToLower(key), where, err)
	}
	if read := *e.read.Load(); read != nil {
		read(value)
	}
	return getReply{Key: key, Value: value}, nil
}

// notReadable is the refusal of a get of the secret key, s as a view of
// call's tool holds it, which does not let the tool read it: not bound to
// the tool (naming the line to add it to), or bound to it served by
// another module.
func notReadable(call *hostfuncs.Call, key string, s hostfuncs.Secret) *tool.Error {
	where := ""
	if s.Where != "" {
		where = ", " + s.Where
	}
	if s.Module != "" {
		return tool.Errorf(tool.KindDenied, "env: secret %q is bound to tool %q served by module %q, and module %q serves it now (config key secrets.%s.tools%s)",
			key, configkey.Fold(call.Tool), s.Module, call.Module, strings.ToLower(key), where)
	}
	return tool.Errorf(tool.KindDenied, "env: secret %q is not bound to tool %q (config key secrets.%s.tools%s: add %s there to allow it)",
		key, call.Tool, strings.ToLower(key), where, configkey.Fold(call.Tool))
}
