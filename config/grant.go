package config

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/warden-run/warden/internal/capsyntax"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/download"
	"github.com/warden-run/warden/tool"
)

// GrantChange is one KEY or KEY=VALUE[,VALUE...] argument of `warden grant`
// and `warden revoke`.
type GrantChange struct {
	Key    string   // one of GrantKeys
	Values []string // empty: the whole key (revoke only)
}

// GrantKeys are the keys of a tool's grant, as `warden grant` spells them.
var GrantKeys = []string{"fs.read", "fs.write", "memory", "memory.topics", "lsp", "net", "env", "client"}

// grantKey is where a GrantKeys entry lives under tools.grants.<tool> and
// how its values are checked and compared.
type grantKey struct {
	path  []string
	list  bool
	check func(string) error
	fold  bool // values compare ignoring case
	// hidesUserinfo: check's refusal of a value with an @ already shows it
	// through download.ShowHost (see checkValue).
	hidesUserinfo bool
}

var grantKeys = map[string]grantKey{
	"fs.read":       {path: []string{"fs", "read"}, list: true, check: checkFSPath},
	"fs.write":      {path: []string{"fs", "write"}, list: true, check: checkFSPath},
	"memory":        {path: []string{"memory"}, check: checkMemory},
	"memory.topics": {path: []string{"memory_topics"}, list: true, check: capsyntax.ValidateTopic},
	"lsp":           {path: []string{"lsp"}, list: true, check: checkLanguage, fold: true},
	"net":           {path: []string{"net"}, list: true, check: capsyntax.ValidateNetGrant, fold: true, hidesUserinfo: true},
	"env":           {path: []string{"env"}, list: true, check: checkEnvKey, fold: true, hidesUserinfo: true},
	"client":        {path: []string{"client"}, list: true, check: tool.ValidateClientFeature, fold: true},
}

// ParseGrantChange parses "fs.read=src,docs", "memory=read" or, for
// revoke, a bare key. Values are split at commas.
func ParseGrantChange(s string) (GrantChange, error) {
	key, value, hasValue := strings.Cut(s, "=")
	key = strings.ToLower(strings.TrimSpace(key))
	if _, ok := grantKeys[key]; !ok {
		// A URL typed where KEY=VALUE goes: user:password@ is not shown.
		return GrantChange{}, fmt.Errorf("unknown grant key %s (known: %s)", showValue(key), strings.Join(GrantKeys, ", "))
	}
	c := GrantChange{Key: key}
	if !hasValue {
		return c, nil
	}
	for _, v := range strings.Split(value, ",") {
		if v = strings.TrimSpace(v); v != "" {
			c.Values = append(c.Values, v)
		}
	}
	if len(c.Values) == 0 {
		return GrantChange{}, fmt.Errorf("%s=: no value", key)
	}
	if k := grantKeys[key]; !k.list && len(c.Values) > 1 {
		return GrantChange{}, fmt.Errorf("%s takes one value, got %d", key, len(c.Values))
	}
	return c, nil
}

func (c GrantChange) String() string {
	if len(c.Values) == 0 {
		return c.Key
	}
	return c.Key + "=" + strings.Join(c.Values, ",")
}

func checkFSPath(p string) error {
	if strings.ContainsRune(p, 0) {
		return errors.New("path contains a NUL byte")
	}
	return nil
}

func checkMemory(level string) error {
	switch tool.MemoryAccess(level) {
	case tool.MemoryRead, tool.MemoryReadWrite:
		return nil
	}
	return fmt.Errorf("must be read or read-write, got %q", level)
}

// The grammar of each grant value is the capability's own, so that a grant
// and a tool's request for it (checked at load) accept the same strings:
// both check it with internal/capsyntax.
func checkLanguage(lang string) error { return capsyntax.ValidateLanguage(lang) }

func checkEnvKey(key string) error { return capsyntax.ValidateEnvKey(key) }

// showValue quotes a grant value (or key) for a refusal. A value with an @
// is shown through download.ShowHost, without what precedes the @: a URL
// typed where a grant value goes carries its user:password@ there, and a
// refusal reaches the terminal and the logs. Every refusal of a grant value,
// at `warden grant` and at load, quotes the value through here.
func showValue(v string) string {
	if strings.Contains(v, "@") {
		return strconv.Quote(download.ShowHost(v)) + " (shown without what precedes the @)"
	}
	return strconv.Quote(v)
}

// showUnquoted is v as Revoke names it, unquoted, or showValue's form when
// v has an @.
func showUnquoted(v string) string {
	if strings.Contains(v, "@") {
		return showValue(v)
	}
	return v
}

// showRoot names the root (what precedes the first :) of the fs grant
// path p, unless p has an @ and the root is not part of what showValue
// shows: then the root may be the user (a token) of a user:password@.
func showRoot(p, root string) string {
	if strings.Contains(p, "@") && !strings.HasPrefix(download.ShowHost(p), root) {
		return "a root"
	}
	return "root " + strconv.Quote(root)
}

// checkValue checks v against key's grammar (grantKeys). The capabilities'
// own checks mostly quote the value whole; a value with an @ is checked in
// the form showValue shows instead, so that the refusal still says why
// without quoting the credential. No grant value but net's holds an @; a
// shown form that passes is refused all the same, as its original failed.
func checkValue(key, v string) error {
	k := grantKeys[key]
	err := k.check(v)
	if err == nil || !strings.Contains(v, "@") || k.hidesUserinfo {
		return err
	}
	if err := k.check(download.ShowHost(v)); err != nil {
		return fmt.Errorf("%w (the value is shown without what precedes the @)", err)
	}
	return fmt.Errorf("%s is not a %s value: no %s value has an @", showValue(v), key, key)
}

// grantPath is the key path of a grant key of a tool.
func grantPath(toolName string, k grantKey) []string {
	return append([]string{"tools", "grants", toolName}, k.path...)
}

func checkToolName(name string) error {
	if !tool.ValidName(name) {
		return fmt.Errorf("%q is not a tool name (%s)", name, tool.NameRule)
	}
	return nil
}

// values reads a list (or a comma-separated string, as viper reads one).
func (d *Document) values(p []string) ([]string, error) {
	n, err := d.Get(p...)
	if err != nil || n == nil || isNull(n) {
		return nil, err
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value == "" {
			return nil, nil
		}
		return strings.Split(n.Value, ","), nil
	case yaml.SequenceNode:
		out := make([]string, 0, len(n.Content))
		for _, item := range n.Content {
			if item.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s: items must be strings", keyPath(p))
			}
			out = append(out, item.Value)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: is %s, not a list", keyPath(p), kindName(n))
}

func (k grantKey) same(a, b string) bool {
	if k.fold {
		return strings.EqualFold(a, b)
	}
	if strings.HasPrefix(k.path[0], "fs") {
		return path.Clean(a) == path.Clean(b)
	}
	return a == b
}

// Grant adds changes to what the tool named toolName is granted. Each value
// is checked first, and every refusal names its key path; a value already
// granted is left as it is, and memory=read does not lower read-write.
func (d *Document) Grant(toolName string, changes ...GrantChange) error {
	if err := checkToolName(toolName); err != nil {
		return err
	}
	for _, c := range changes {
		k, ok := grantKeys[c.Key]
		if !ok {
			return fmt.Errorf("tools.grants.%s: unknown grant key %s (known: %s)", toolName, showValue(c.Key), strings.Join(GrantKeys, ", "))
		}
		p := grantPath(toolName, k)
		if len(c.Values) == 0 {
			return fmt.Errorf("%s: grant %s needs a value (%s=...)", keyPath(p), c.Key, c.Key)
		}
		for _, v := range c.Values {
			if err := checkValue(c.Key, v); err != nil {
				return fmt.Errorf("%s: %w", keyPath(p), err)
			}
		}
		if !k.list {
			cur, err := d.values(p)
			if err != nil {
				return err
			}
			if len(cur) == 1 && cur[0] == string(tool.MemoryReadWrite) {
				continue
			}
			if err := d.Set(Str(c.Values[0]), p...); err != nil {
				return err
			}
			continue
		}
		cur, err := d.values(p)
		if err != nil {
			return err
		}
		next := slices.Clone(cur)
		for _, v := range c.Values {
			if !slices.ContainsFunc(next, func(have string) bool { return k.same(have, v) }) {
				next = append(next, v)
			}
		}
		if len(next) == len(cur) {
			continue
		}
		if err := d.Set(List(next...), p...); err != nil {
			return err
		}
	}
	return nil
}

// Revoke removes changes from the tool's grant: the values listed, or the
// whole key when none are. Revoking the memory level granted (or read,
// which read-write includes) revokes memory and its topics. A value
// that is not granted is an error naming what is. Keys left empty are
// removed, and a tool left with nothing keeps an empty entry ({}).
func (d *Document) Revoke(toolName string, changes ...GrantChange) error {
	if err := checkToolName(toolName); err != nil {
		return err
	}
	for _, c := range changes {
		k, ok := grantKeys[c.Key]
		if !ok {
			return fmt.Errorf("tools.grants.%s: unknown grant key %s (known: %s)", toolName, showValue(c.Key), strings.Join(GrantKeys, ", "))
		}
		p := grantPath(toolName, k)
		cur, err := d.values(p)
		if err != nil {
			return err
		}
		next := cur[:0:0]
		if !k.list && len(c.Values) > 0 && len(cur) > 0 {
			// Revoking the level granted takes memory back, not a step
			// down: "revoke memory=read-write" after "grant
			// memory=read-write" leaves nothing. read is part of
			// read-write: revoking it revokes both.
			switch {
			case c.Values[0] == cur[0], c.Values[0] == string(tool.MemoryRead):
			default:
				return fmt.Errorf("%s: %s is not granted (granted: %s)", keyPath(p), showUnquoted(c.Values[0]), showUnquoted(cur[0]))
			}
		} else if len(c.Values) > 0 {
			for _, v := range c.Values {
				if !slices.ContainsFunc(cur, func(have string) bool { return k.same(have, v) }) {
					return fmt.Errorf("%s: %s is not granted (granted: %s)", keyPath(p), showUnquoted(v), listOrNone(cur))
				}
			}
			for _, have := range cur {
				if !slices.ContainsFunc(c.Values, func(v string) bool { return k.same(have, v) }) {
					next = append(next, have)
				}
			}
		} else if len(cur) == 0 {
			return fmt.Errorf("%s: nothing is granted", keyPath(p))
		}
		switch {
		case len(next) == 0:
			if err := d.Delete(p...); err != nil {
				return err
			}
		case k.list:
			err = d.Set(List(next...), p...)
		default:
			err = d.Set(Str(next[0]), p...)
		}
		if err != nil {
			return err
		}
		// No topics is the whole store: a level left without the topics
		// that limited it would grant more than before the revoke. The
		// last topic takes the level with it.
		if c.Key == "memory.topics" && len(next) == 0 {
			if err := d.Delete(grantPath(toolName, grantKeys["memory"])...); err != nil {
				return err
			}
		}
		// Topics without a level grant nothing, and a later grant of a
		// level would silently be limited by them: they go with it.
		if c.Key == "memory" && len(next) == 0 {
			if err := d.Delete(grantPath(toolName, grantKeys["memory.topics"])...); err != nil {
				return err
			}
		}
		// fs: {} with nothing left goes too.
		if len(p) > 4 {
			parent := p[:len(p)-1]
			if n, err := d.Get(parent...); err == nil && n != nil && n.Kind == yaml.MappingNode && len(n.Content) == 0 {
				if err := d.Delete(parent...); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// RevokeAll leaves the tool's grant empty ({}), keeping the module it is
// bound to.
func (d *Document) RevokeAll(toolName string) error {
	if err := checkToolName(toolName); err != nil {
		return err
	}
	n, err := d.Get("tools", "grants", toolName)
	if err != nil || n == nil {
		return err
	}
	module, err := d.GrantModule(toolName)
	if err != nil {
		return err
	}
	if err := d.Set(EmptyMap(), "tools", "grants", toolName); err != nil || module == "" {
		return err
	}
	return d.Set(Str(module), "tools", "grants", toolName, "module")
}

// GrantModule returns the module field of the tool's grant entry, "" when
// there is none.
func (d *Document) GrantModule(toolName string) (string, error) {
	n, err := d.Get("tools", "grants", toolName, "module")
	if err != nil || n == nil || isNull(n) {
		return "", err
	}
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("tools.grants.%s.module: is %s, not a module name", toolName, kindName(n))
	}
	return n.Value, nil
}

// GrantBinding returns the module the tool's grant entry belongs to: its
// module field, else the entry's name (the tool's, in lower case), as
// Config.GrantModule reads it once loaded. exists is false when the file
// has no entry for the tool.
func (d *Document) GrantBinding(toolName string) (module string, exists bool, err error) {
	n, err := d.Get("tools", "grants", toolName)
	if err != nil || n == nil {
		return "", false, err
	}
	module, err = d.GrantModule(toolName)
	if err != nil || module != "" {
		return module, true, err
	}
	return configkey.Fold(toolName), true, nil
}

// BindGrant writes module as the module the tool's grant belongs to
// (tools.grants.<tool>.module), creating the entry if needed. The grant
// then applies only while that module serves the tool.
//
// It never moves what an entry holds to another module: an entry that
// grants anything (or holds the tool's config) and belongs to another
// module than module, by its module field or by its name, is refused
// (*GrantMoveError). Moving it would hand everything the person granted
// one module's code to another's, while the edit asked for (and showed)
// only the binding or one more value. Every writer of a binding (warden
// grant --module, install, "allow always") goes through here.
func (d *Document) BindGrant(toolName, module string) error {
	if err := checkToolName(toolName); err != nil {
		return err
	}
	if !tool.ValidName(module) {
		return fmt.Errorf("tools.grants.%s.module: %q is not a module name (%s)", toolName, module, tool.NameRule)
	}
	cur, err := d.GrantModule(toolName)
	if err != nil || cur == module {
		return err
	}
	bound, exists, err := d.GrantBinding(toolName)
	if err != nil {
		return err
	}
	if exists && bound != module {
		held, err := d.grantHolds(toolName)
		if err != nil {
			return err
		}
		if len(held) > 0 {
			return &GrantMoveError{Key: configkey.Fold(toolName), From: bound, To: module, Holds: held}
		}
	}
	return d.Set(Str(module), "tools", "grants", toolName, "module")
}

// grantHolds lists the keys of the tool's grant entry other than module:
// what binding it to a module hands that module.
func (d *Document) grantHolds(toolName string) ([]string, error) {
	n, err := d.Get("tools", "grants", toolName)
	if err != nil || n == nil || isNull(n) {
		return nil, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("tools.grants.%s: is %s, not a mapping", toolName, kindName(n))
	}
	var held []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; !strings.EqualFold(k, "module") {
			held = append(held, k)
		}
	}
	return held, nil
}

// GrantMoveError refuses to bind a grant entry that holds something to
// another module than the one it belongs to.
type GrantMoveError struct {
	Key   string   // tools.grants.<Key>
	From  string   // the module the entry belongs to
	To    string   // the module it was asked to belong to
	Holds []string // the entry's keys other than module (net, fs, config, ...)
}

func (e *GrantMoveError) Error() string {
	return fmt.Sprintf("tools.grants.%s belongs to module %s and holds %s: binding it to module %s would hand all of that to %s, "+
		"which was not asked; nothing written. To give module %s a grant of its own, empty the entry first "+
		"(warden revoke %s --all), then: warden grant %s --module %s KEY=VALUE...",
		e.Key, e.From, strings.Join(e.Holds, ", "), e.To, e.To, e.To, e.Key, e.Key, e.To)
}

func listOrNone(values []string) string {
	if len(values) == 0 {
		return "nothing"
	}
	shown := make([]string, len(values))
	for i, v := range values {
		shown[i] = showUnquoted(v)
	}
	return strings.Join(shown, ", ")
}

var sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Pin records sum, a lowercase hex sha256, as the approved content of the
// module named module (tools.pins.<module>).
func (d *Document) Pin(module, sum string) error {
	if !sha256Pattern.MatchString(sum) {
		return fmt.Errorf("tools.pins.%s: %q is not a lowercase hex sha256", module, sum)
	}
	if !tool.ValidName(module) {
		return fmt.Errorf("tools.pins: %q is not a module name (%s)", module, tool.NameRule)
	}
	return d.Set(Str(sum), "tools", "pins", configkey.Fold(module))
}

// Unpin removes the pin of module.
func (d *Document) Unpin(module string) error {
	return d.Delete("tools", "pins", configkey.Fold(module))
}
