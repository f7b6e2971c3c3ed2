package config

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-viper/mapstructure/v2"
	"go.yaml.in/yaml/v3"

	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/suggest"
	"github.com/warden-run/warden/internal/termsafe"
)

// A problem is one thing wrong with a config, where it is written: a line
// of config.yaml, a WARDEN_* variable, or neither (a Config built in code).
type problem struct {
	at   string // "config.yaml:3", "config.yaml", "WARDEN_SERVER_TOKEN" or ""
	line int    // 0 when not known; orders the problems
	col  int
	msg  string // "unknown key …" or "a.b: …"
}

func (p problem) String() string {
	if p.at == "" {
		return p.msg
	}
	return p.at + ": " + p.msg
}

// problems is every problem found in one config, one per line, in the
// order of the file (those without a line last, in the order found): the
// same file gives the same text at start, on reload and in warden grant.
type problems []problem

func (ps problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// sorted orders ps by line and column, the ones without a line last,
// keeping the order found among equals.
func (ps problems) sorted() problems {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if (a.line == 0) != (b.line == 0) {
			return b.line == 0
		}
		if a.line != b.line {
			return a.line < b.line
		}
		return a.col < b.col
	})
	return ps
}

// err is ps sorted as an error, or nil when there is none.
func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps.sorted()
}

// at renders a position in the file shown as file.
func at(file string, n *yaml.Node) (string, int, int) {
	if n == nil || n.Line < 1 {
		return file, 0, 0
	}
	return fmt.Sprintf("%s:%d", file, n.Line), n.Line, n.Column
}

// shape is what config.yaml may hold at one key path, as the Config
// struct's mapstructure tags say: a struct's known keys, a map's free keys
// (tools.grants.<tool>) and their values, a list's items, or a leaf value.
type shape struct {
	typ    reflect.Type
	fields map[string]*shape // a struct's keys
	names  []string          // the same, sorted: the candidates of a suggestion
	elem   *shape            // a map's values, a list's items
}

// configShape is Config's shape, walked by reflection once.
var configShape = shapeOf(reflect.TypeOf(Config{}))

func shapeOf(t reflect.Type) *shape {
	s := &shape{typ: t}
	switch t.Kind() {
	case reflect.Struct:
		if t == reflect.TypeOf(time.Time{}) {
			return s
		}
		s.fields = map[string]*shape{}
		for i := range t.NumField() {
			f := t.Field(i)
			name := strings.Split(f.Tag.Get("mapstructure"), ",")[0]
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			s.fields[name] = shapeOf(f.Type)
			s.names = append(s.names, name)
		}
		sort.Strings(s.names)
	case reflect.Map, reflect.Slice:
		if t.Elem().Kind() != reflect.Uint8 {
			s.elem = shapeOf(t.Elem())
		}
	}
	return s
}

func (s *shape) isStruct() bool { return s.fields != nil }
func (s *shape) isMap() bool    { return s.typ.Kind() == reflect.Map }
func (s *shape) isList() bool   { return s.typ.Kind() == reflect.Slice && s.elem != nil }

// lookup is the shape at a key path as viper writes it (folded keys), or
// nil when Config has no such key.
func (s *shape) lookup(path []string) *shape {
	for _, k := range path {
		switch {
		case s.isStruct():
			s = s.fields[k]
		case s.isMap():
			s = s.elem
		default:
			return nil
		}
		if s == nil {
			return nil
		}
	}
	return s
}

// decodeHook is how Load turns YAML values into Config's types; decodes
// applies it to one value, so that checkDocument accepts exactly what the
// decoder does.
func decodeHook() mapstructure.DecodeHookFunc {
	return mapstructure.ComposeDecodeHookFunc(
		byteSizeHook, mapstructure.StringToTimeDurationHookFunc(), mapstructure.StringToSliceHookFunc(","))
}

// decodes reports whether v decodes into a t as Load decodes config.yaml
// (viper's settings: weakly typed input, Load's hooks).
func decodes(v any, t reflect.Type) bool {
	out := reflect.New(t)
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result: out.Interface(), WeaklyTypedInput: true, DecodeHook: decodeHook(),
	})
	return err == nil && dec.Decode(v) == nil
}

// want says what a value of t is written like, without Go's type names.
func want(t reflect.Type) string {
	switch {
	case t == reflect.TypeOf(time.Duration(0)):
		return `a duration like "30s"`
	case t == byteSizeType:
		return `a size like "128MiB"`
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a single value"
	case reflect.Slice:
		return "a list"
	}
	return `a mapping ("key: value" lines)`
}

// got says what n is, quoting a scalar (cut short, escaped for a
// terminal, without what precedes an @: showValue).
func got(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		if n.Alias != nil {
			return got(n.Alias)
		}
	}
	v := n.Value
	if utf8.RuneCountInString(v) > 40 {
		r := []rune(v)
		v = string(r[:40]) + "…"
	}
	return showValue(termsafe.Line(v))
}

// docCheck walks one YAML document against configShape.
type docCheck struct {
	file string
	out  problems
	seen map[[2]any]bool // (node, shape) pairs checked: an alias is checked once
}

// checkDocument reports every key of config.yaml that Config does not have,
// at every depth, and every value its key's type does not take, each with
// its line. A document that does not parse is left to the caller.
func checkDocument(file string, data []byte) problems {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return nil
	}
	d := &docCheck{file: file, seen: map[[2]any]bool{}}
	d.check(root.Content[0], configShape, "")
	return d.out
}

func (d *docCheck) add(n *yaml.Node, msg string) {
	where, line, col := at(d.file, n)
	d.out = append(d.out, problem{at: where, line: line, col: col, msg: msg})
}

func (d *docCheck) check(n *yaml.Node, s *shape, path string) {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return
		}
		n = n.Alias
	}
	k := [2]any{n, s}
	if d.seen[k] {
		return
	}
	d.seen[k] = true
	switch {
	case (s.isStruct() || s.isMap()) && n.Kind == yaml.MappingNode:
		d.mapping(n, s, path)
	case s.isList() && n.Kind == yaml.SequenceNode:
		for i, item := range n.Content {
			d.check(item, s.elem, fmt.Sprintf("%s[%d]", path, i))
		}
	default:
		var v any
		if n.Decode(&v) != nil {
			return // a YAML error, which the parser reports
		}
		if !decodes(v, s.typ) {
			d.add(n, fmt.Sprintf("%s: want %s, got %s", shown(path), want(s.typ), got(n)))
			return
		}
		if s.isList() && n.Kind == yaml.MappingNode && s.elem.isStruct() {
			d.check(n, s.elem, path) // one item written without its list
		}
	}
}

func (d *docCheck) mapping(n *yaml.Node, s *shape, path string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		if key.Tag == "!!merge" { // <<: *base merges base's keys here
			if value.Kind == yaml.SequenceNode {
				for _, m := range value.Content {
					d.check(m, s, path)
				}
			} else {
				d.check(value, s, path)
			}
			continue
		}
		if s.isMap() {
			d.check(value, s.elem, join(path, key.Value))
			continue
		}
		name := configkey.Fold(key.Value)
		field, ok := s.fields[name]
		if !ok {
			d.add(key, unknownKey(key.Value, path, s.names))
			continue
		}
		d.check(value, field, join(path, name))
	}
}

// shown is a key path as a message names it.
func shown(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

func unknownKey(key, path string, known []string) string {
	under := "the top level"
	if path != "" {
		under = strconv.Quote(path)
	}
	msg := fmt.Sprintf("unknown key %s under %s", strconv.Quote(termsafe.Line(key)), under)
	if s := closestKey(configkey.Fold(key), known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

// closestKey is the known key closest to key by edit distance when it is
// close enough to be a slip (one edit in a short key, two in a longer
// one), else "". Ties go to the first in sorted order.
func closestKey(key string, known []string) string {
	limit := 1
	if len(key) > 5 {
		limit = 2
	}
	if i := suggest.Closest(key, known, limit); i >= 0 {
		return known[i]
	}
	return ""
}

// envVar is the variable that overrides the key path (viper's folded
// segments) through WARDEN_<KEY PATH>.
func envVar(path []string) string {
	return configkey.EnvPrefix + strings.ToUpper(strings.Join(path, "_"))
}

// checkEnv reports every WARDEN_* override of the keys in keys (viper's,
// "::"-separated) whose value the key's type does not take, naming the
// variable: it has no line.
func checkEnv(keys []string) problems {
	var out problems
	sort.Strings(keys)
	for _, key := range keys {
		path := strings.Split(key, "::")
		name := envVar(path)
		value := os.Getenv(name)
		if value == "" {
			continue // viper ignores an empty variable (AllowEmptyEnv is off)
		}
		s := configShape.lookup(path)
		if s == nil || decodes(value, s.typ) {
			continue
		}
		out = append(out, problem{at: name, msg: fmt.Sprintf("%s: want %s, got %s", strings.Join(path, "."), want(s.typ), got(&yaml.Node{Kind: yaml.ScalarNode, Value: value}))})
	}
	return out
}

// keyNode finds the key node of a dotted key path as Validate names it
// (folded, with map keys that may themselves hold dots) in the document
// root, or nil.
func keyNode(root *yaml.Node, key string) *yaml.Node {
	if root == nil {
		return nil
	}
	segs := splitKey(key)
	n := root
	var found *yaml.Node
	for len(segs) > 0 {
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			return nil
		}
		matched := false
		// The longest run of segments that is one key of this mapping.
		for j := len(segs); j >= 1 && !matched; j-- {
			want := strings.Join(segs[:j], ".")
			for i := 0; i+1 < len(n.Content); i += 2 {
				if configkey.Fold(n.Content[i].Value) == want {
					found, n, segs, matched = n.Content[i], n.Content[i+1], segs[j:], true
					break
				}
			}
		}
		if !matched {
			return nil
		}
	}
	return found
}

// splitKey splits a key path as Validate writes it at its dots, keeping a
// quoted segment ("ghcr.io/acme/tools") whole and unquoted.
func splitKey(key string) []string {
	var segs []string
	for key != "" {
		if q, err := strconv.QuotedPrefix(key); err == nil {
			u, _ := strconv.Unquote(q)
			segs = append(segs, u)
			key = strings.TrimPrefix(key[len(q):], ".")
			continue
		}
		seg, rest, _ := strings.Cut(key, ".")
		segs = append(segs, seg)
		key = rest
	}
	return segs
}

// locator returns where Validate's problem at a key path is written: the
// WARDEN_* variable that overrides the key when set, else the key's line
// in the file, else the file alone.
func (c *Config) locator() func(key, msg string) problem {
	root := c.root()
	return func(key, msg string) problem {
		if name := envVar(splitKey(key)); os.Getenv(name) != "" { // as checkEnv
			return problem{at: name, msg: key + ": " + msg}
		}
		if c.File == "" {
			return problem{msg: key + ": " + msg}
		}
		where, line, col := at(c.shownFile(), keyNode(root, key))
		return problem{at: where, line: line, col: col, msg: key + ": " + msg}
	}
}

// root is the mapping File holds, parsed again from src (nil when none).
func (c *Config) root() *yaml.Node {
	var doc yaml.Node
	if len(c.src) == 0 || yaml.Unmarshal(c.src, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	return doc.Content[0]
}

// shownFile is File as messages name it: as the user gave it.
func (c *Config) shownFile() string {
	if c.shown != "" {
		return c.shown
	}
	return c.File
}
