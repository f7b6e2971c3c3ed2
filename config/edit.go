package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/warden-run/warden/internal/configkey"
)

// Document is config.yaml as text, edited in place. A change rewrites only
// the bytes of the entries it touches: every other line, comment, blank
// line and alignment stays exactly as the person wrote it. The YAML node
// tree locates entries; the text is spliced, never re-encoded, because
// re-encoding normalizes indentation, comment spacing and blank lines.
//
// After every change the new text is parsed again and must decode to
// exactly the intended data; a layout the splicer does not handle (a
// multi-line plain scalar, an anchor) is refused rather than written
// wrong.
type Document struct {
	src []byte
}

// ParseDocument checks that src is YAML whose top level is a mapping (or
// empty) and returns it for editing.
func ParseDocument(src []byte) (*Document, error) {
	if _, _, err := parseTree(src); err != nil {
		return nil, err
	}
	return &Document{src: slices.Clone(src)}, nil
}

// Bytes returns the document's current text.
func (d *Document) Bytes() []byte { return d.src }

// Get returns the node at path, or nil when a key on the way is missing.
// Keys match case-insensitively, as viper folds them.
func (d *Document) Get(path ...string) (*yaml.Node, error) {
	_, root, err := parseTree(d.src)
	if err != nil || root == nil {
		return nil, err
	}
	n := root
	for i, key := range path {
		if n.Kind != yaml.MappingNode {
			if isNull(n) {
				return nil, nil
			}
			return nil, fmt.Errorf("%s: is %s, not a mapping", keyPath(path[:i]), kindName(n))
		}
		j, err := findKey(n, key, path[:i])
		if err != nil || j < 0 {
			return nil, err
		}
		n = n.Content[j+1]
	}
	return n, nil
}

// Set makes value the value at path, creating the mappings on the way.
// Build values with Str, List and EmptyMap.
func (d *Document) Set(value *yaml.Node, path ...string) error {
	return d.apply(path, value)
}

// Delete removes the key at path; a missing key is not an error. A block
// mapping left empty becomes {}.
func (d *Document) Delete(path ...string) error {
	return d.apply(path, nil)
}

// Str is a string value for Set.
func Str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// List is a list of strings for Set, written in flow style ([a, b]) when new.
func List(values ...string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
	for _, v := range values {
		n.Content = append(n.Content, Str(v))
	}
	return n
}

// EmptyMap is {} for Set.
func EmptyMap() *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle}
}

func (d *Document) apply(path []string, value *yaml.Node) error {
	if len(path) == 0 {
		return errors.New("edit: empty key path")
	}
	_, root, err := parseTree(d.src)
	if err != nil {
		return err
	}
	e := newEditor(d.src)
	if root == nil {
		if value == nil {
			return nil
		}
		e.insertAt(len(d.src), renderEntry(path, value, 0))
	} else if root.Style&yaml.FlowStyle != 0 {
		return fmt.Errorf("config is a flow mapping ({...}); write it in block style to edit it with warden")
	} else if err := e.set(nil, root, nil, path, value); err != nil {
		return err
	}
	out := e.result()

	// The intended data: the same change made to the parsed tree.
	var want any
	if root == nil {
		root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	if value == nil {
		deleteIn(root, path)
	} else if err := setIn(root, nil, path, value); err != nil {
		return err
	}
	if err := root.Decode(&want); err != nil {
		return fmt.Errorf("edit %s: %w", keyPath(path), err)
	}
	var got any
	if err := yaml.Unmarshal(out, &got); err != nil {
		return fmt.Errorf("edit %s: cannot edit this layout in place (%v); edit the file by hand", keyPath(path), yamlError(err))
	}
	if !reflect.DeepEqual(normalize(got), normalize(want)) {
		return fmt.Errorf("edit %s: cannot edit this layout in place; edit the file by hand", keyPath(path))
	}
	d.src = out
	return nil
}

// normalize makes an empty document and an empty mapping compare equal.
func normalize(v any) any {
	if v == nil {
		return map[string]any{}
	}
	return v
}

// parseTree returns the document node and its top-level mapping (nil for
// an empty document).
func parseTree(src []byte) (doc, root *yaml.Node, err error) {
	var n yaml.Node
	if err := yaml.Unmarshal(src, &n); err != nil {
		return nil, nil, fmt.Errorf("parse config: %w", yamlError(err))
	}
	if n.Kind == 0 || len(n.Content) == 0 {
		return &n, nil, nil
	}
	top := n.Content[0]
	if isNull(top) {
		return &n, nil, nil
	}
	if top.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("parse config: the top level must be a mapping, not %s", kindName(top))
	}
	return &n, top, nil
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func isFlow(n *yaml.Node) bool { return n.Style&yaml.FlowStyle != 0 }

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		if isNull(n) {
			return "empty"
		}
		return fmt.Sprintf("the value %q", n.Value)
	}
	return "a document"
}

func keyPath(path []string) string {
	if len(path) == 0 {
		return "(top level)"
	}
	return strings.Join(path, ".")
}

// findKey returns the index in m.Content of the key matching key, or -1.
// An exact match wins; otherwise keys match ignoring case, as viper reads
// them, and two such keys are ambiguous.
func findKey(m *yaml.Node, key string, at []string) (int, error) {
	found := -1
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Value == key {
			return i, nil
		}
		// configkey.Fold, as viper folds keys: EqualFold's Unicode
		// folding (ſ for s, K for k) would land an edit on a key viper
		// reads as another.
		if configkey.Fold(k.Value) == configkey.Fold(key) {
			if found >= 0 {
				return -1, fmt.Errorf("%s: keys %q and %q differ only in case, and config keys ignore case; keep one",
					keyPath(at), m.Content[found].Value, k.Value)
			}
			found = i
		}
	}
	return found, nil
}

// setIn makes the same change as the editor on a node tree: value nil
// deletes.
func setIn(m *yaml.Node, at, path []string, value *yaml.Node) error {
	here := append(slices.Clone(at), path[0])
	i, err := findKey(m, path[0], at)
	if err != nil {
		return err
	}
	if i < 0 {
		k := Str(path[0])
		if len(path) == 1 {
			m.Content = append(m.Content, k, value)
			return nil
		}
		child := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		m.Content = append(m.Content, k, child)
		return setIn(child, here, path[1:], value)
	}
	if len(path) == 1 {
		m.Content[i+1] = value
		return nil
	}
	child := m.Content[i+1]
	if isNull(child) {
		child = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		m.Content[i+1] = child
	}
	if child.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: is %s, not a mapping", keyPath(here), kindName(child))
	}
	return setIn(child, here, path[1:], value)
}

func deleteIn(m *yaml.Node, path []string) {
	i, err := findKey(m, path[0], nil)
	if err != nil || i < 0 {
		return
	}
	if len(path) == 1 {
		m.Content = slices.Delete(m.Content, i, i+2)
		return
	}
	if child := m.Content[i+1]; child.Kind == yaml.MappingNode {
		deleteIn(child, path[1:])
	}
}

func cloneNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, child := range n.Content {
		c.Content[i] = cloneNode(child)
	}
	return &c
}

// editor collects splices of the source text, applied together.
type editor struct {
	src        []byte
	lineStarts []int
	edits      []splice
}

type splice struct {
	from, to int
	text     string
}

func newEditor(src []byte) *editor {
	e := &editor{src: src, lineStarts: []int{0}}
	for i, b := range src {
		if b == '\n' {
			e.lineStarts = append(e.lineStarts, i+1)
		}
	}
	return e
}

func (e *editor) replace(from, to int, text string) {
	e.edits = append(e.edits, splice{from, to, text})
}

// insertAt inserts text, which ends in a newline, at the start of a line
// (or the end of the file, which may lack its final newline).
func (e *editor) insertAt(off int, text string) {
	if off == len(e.src) && off > 0 && e.src[off-1] != '\n' {
		text = "\n" + text
	}
	e.replace(off, off, text)
}

func (e *editor) result() []byte {
	edits := slices.Clone(e.edits)
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].from > edits[j].from })
	out := slices.Clone(e.src)
	for _, s := range edits {
		out = slices.Concat(out[:s.from], []byte(s.text), out[s.to:])
	}
	return out
}

// offset converts a node's line and column (1-based, counted in
// characters) to a byte offset.
func (e *editor) offset(n *yaml.Node) int {
	if n.Line < 1 || n.Line > len(e.lineStarts) {
		return len(e.src)
	}
	off := e.lineStarts[n.Line-1]
	for c := 1; c < n.Column && off < len(e.src) && e.src[off] != '\n'; c++ {
		_, size := utf8.DecodeRune(e.src[off:])
		off += size
	}
	return off
}

func (e *editor) lineStart(off int) int {
	i := sort.SearchInts(e.lineStarts, off+1) - 1
	return e.lineStarts[max(i, 0)]
}

// lineEnd returns the offset of the newline ending off's line (or the end).
func (e *editor) lineEnd(off int) int {
	if i := bytes.IndexByte(e.src[off:], '\n'); i >= 0 {
		return off + i
	}
	return len(e.src)
}

// nextLine returns the offset just past the newline ending off's line.
func (e *editor) nextLine(off int) int {
	end := e.lineEnd(off)
	if end < len(e.src) {
		return end + 1
	}
	return end
}

// firstOnLine reports whether only spaces precede n on its line.
func (e *editor) firstOnLine(n *yaml.Node) bool {
	off := e.offset(n)
	return len(bytes.TrimLeft(e.src[e.lineStart(off):off], " ")) == 0
}

// restIsComment reports whether only spaces and a comment follow off on
// its line.
func (e *editor) restIsComment(off int) bool {
	rest := bytes.TrimLeft(e.src[off:e.lineEnd(off)], " \t")
	return len(rest) == 0 || rest[0] == '#'
}

var errLayout = errors.New("cannot edit this layout in place; edit the file by hand")

// end returns the offset just past n's text. indent is the indentation of
// the line that owns n, which bounds a block scalar.
func (e *editor) end(n *yaml.Node, indent int) (int, error) {
	start := e.offset(n)
	switch {
	case n.Anchor != "" || n.Kind == yaml.AliasNode:
		return 0, fmt.Errorf("anchors and aliases: %w", errLayout)
	case n.Kind == yaml.ScalarNode:
		return e.scalarEnd(n, start, indent)
	case isFlow(n):
		return e.flowEnd(start)
	case len(n.Content) == 0:
		return 0, errLayout
	case n.Kind == yaml.MappingNode:
		return e.end(n.Content[len(n.Content)-1], n.Column-1)
	default:
		return e.end(n.Content[len(n.Content)-1], n.Column-1)
	}
}

func (e *editor) scalarEnd(n *yaml.Node, start, indent int) (int, error) {
	src := e.src
	switch n.Style {
	case yaml.DoubleQuotedStyle:
		for i := start + 1; i < len(src); i++ {
			switch src[i] {
			case '\\':
				i++
			case '"':
				return i + 1, nil
			}
		}
		return 0, errLayout
	case yaml.SingleQuotedStyle:
		for i := start + 1; i < len(src); i++ {
			if src[i] == '\'' {
				if i+1 < len(src) && src[i+1] == '\'' {
					i++
					continue
				}
				return i + 1, nil
			}
		}
		return 0, errLayout
	case yaml.LiteralStyle, yaml.FoldedStyle:
		// The header line, then every following line that is blank or
		// indented deeper than the owner.
		end := e.lineEnd(start)
		for off := e.nextLine(start); off < len(src); off = e.nextLine(off) {
			line := src[off:e.lineEnd(off)]
			trimmed := bytes.TrimLeft(line, " ")
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if len(line)-len(trimmed) <= indent {
				break
			}
			end = e.lineEnd(off)
		}
		return end, nil
	}
	if isNull(n) && n.Value == "" {
		return start, nil // nothing written: "key:"
	}
	// A plain scalar on one line ends at a comment or the line's end.
	lineEnd := e.lineEnd(start)
	end := lineEnd
	for i := start; i < lineEnd; i++ {
		if src[i] == '#' && i > start && (src[i-1] == ' ' || src[i-1] == '\t') {
			end = i
			break
		}
	}
	for end > start && (src[end-1] == ' ' || src[end-1] == '\t') {
		end--
	}
	if string(src[start:end]) != n.Value && !isNull(n) && !looksResolved(n) {
		return 0, fmt.Errorf("multi-line value %q: %w", firstLine(n.Value), errLayout)
	}
	return end, nil
}

// looksResolved allows plain scalars whose text differs from their value
// only by YAML resolution (e.g. 0x10 read as an int keeps its text).
func looksResolved(n *yaml.Node) bool { return n.Tag != "!!str" && !strings.Contains(n.Value, "\n") }

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// flowEnd finds the bracket closing the flow collection opening at start.
func (e *editor) flowEnd(start int) (int, error) {
	src := e.src
	depth := 0
	prev := byte('[') // the last significant byte, to tell a quote from an apostrophe
	for i := start; i < len(src); i++ {
		c := src[i]
		switch c {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		case '"', '\'':
			if !strings.ContainsRune("[{,:?", rune(prev)) {
				break
			}
			for i++; i < len(src); i++ {
				if c == '"' && src[i] == '\\' {
					i++
					continue
				}
				if src[i] == c {
					if c == '\'' && i+1 < len(src) && src[i+1] == '\'' {
						i++
						continue
					}
					break
				}
			}
		case '#':
			if i > start && (src[i-1] == ' ' || src[i-1] == '\t' || src[i-1] == '\n') {
				i = e.lineEnd(i) - 1
				continue
			}
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			prev = c
		}
	}
	return 0, fmt.Errorf("unterminated flow collection: %w", errLayout)
}

// colonAfter returns the offset just past the ':' that follows key k.
func (e *editor) colonAfter(k *yaml.Node) (int, error) {
	start := e.offset(k)
	end := start
	if k.Style == yaml.DoubleQuotedStyle || k.Style == yaml.SingleQuotedStyle {
		var err error
		if end, err = e.scalarEnd(k, start, 0); err != nil {
			return 0, err
		}
	} else {
		// A plain key ends at the ": " (or ":" and the line's end).
		lineEnd := e.lineEnd(start)
		for end < lineEnd && !(e.src[end] == ':' && (end+1 == lineEnd || e.src[end+1] == ' ' || e.src[end+1] == '\t')) {
			end++
		}
	}
	for i := end; i < len(e.src) && (e.src[i] == ' ' || e.src[i] == '\t'); i++ {
		end = i + 1
	}
	if end >= len(e.src) || e.src[end] != ':' {
		return 0, fmt.Errorf("key %q: %w", k.Value, errLayout)
	}
	return end + 1, nil
}

// set edits block mapping m (the value of parentKey, nil at the top) so
// that path holds value (nil: is deleted).
func (e *editor) set(parentKey, m *yaml.Node, at, path []string, value *yaml.Node) error {
	here := append(slices.Clone(at), path[0])
	i, err := findKey(m, path[0], at)
	if err != nil {
		return err
	}
	if i < 0 {
		if value == nil {
			return nil
		}
		return e.insertEntry(m, path, value)
	}
	k, v := m.Content[i], m.Content[i+1]
	if k.Kind != yaml.ScalarNode || k.Anchor != "" || v.Anchor != "" || v.Kind == yaml.AliasNode {
		return fmt.Errorf("%s: anchors, aliases and complex keys: %w", keyPath(here), errLayout)
	}
	if len(path) == 1 {
		if value == nil {
			return e.deleteEntry(parentKey, m, i)
		}
		return e.replaceValue(k, v, value)
	}
	switch {
	case v.Kind == yaml.MappingNode && !isFlow(v):
		return e.set(k, v, here, path[1:], value)
	case v.Kind == yaml.MappingNode || isNull(v):
		// A flow mapping or nothing yet: build the new value and write it
		// whole. An empty {} that gains entries turns into block style.
		if isNull(v) && value == nil {
			return nil
		}
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		if !isNull(v) {
			n = cloneNode(v)
		}
		if value == nil {
			deleteIn(n, path[1:])
		} else if err := setIn(n, here, path[1:], value); err != nil {
			return err
		}
		if len(v.Content) == 0 {
			n.Style = 0
		}
		return e.replaceValue(k, v, n)
	default:
		return fmt.Errorf("%s: is %s, not a mapping", keyPath(here), kindName(v))
	}
}

// insertEntry adds path: value after the last entry of block mapping m.
func (e *editor) insertEntry(m *yaml.Node, path []string, value *yaml.Node) error {
	last := m.Content[len(m.Content)-1]
	end, err := e.end(last, m.Column-1)
	if err != nil {
		return err
	}
	if !e.restIsComment(end) {
		return errLayout
	}
	e.insertAt(e.nextLine(end), renderEntry(path, value, m.Column-1))
	return nil
}

// deleteEntry removes entry i of block mapping m; the last entry of a
// nested mapping leaves {} behind rather than an empty value.
func (e *editor) deleteEntry(parentKey, m *yaml.Node, i int) error {
	if len(m.Content) == 2 && parentKey != nil {
		return e.replaceValue(parentKey, m, EmptyMap())
	}
	k, v := m.Content[i], m.Content[i+1]
	if !e.firstOnLine(k) {
		return errLayout
	}
	end, err := e.end(v, k.Column-1)
	if err != nil {
		return err
	}
	if !e.restIsComment(end) {
		return errLayout
	}
	e.replace(e.lineStart(e.offset(k)), e.nextLine(end), "")
	return nil
}

// replaceValue makes n the value of key k, whose value is now v.
func (e *editor) replaceValue(k, v, n *yaml.Node) error {
	if !e.firstOnLine(k) {
		return errLayout
	}
	indent := k.Column - 1
	if v.Kind == yaml.SequenceNode && !isFlow(v) && n.Kind == yaml.SequenceNode && len(n.Content) > 0 {
		if ok, err := e.editBlockList(v, n, indent); ok || err != nil {
			return err
		}
	}
	colon, err := e.colonAfter(k)
	if err != nil {
		return err
	}
	vEnd, err := e.end(v, indent)
	if err != nil {
		return err
	}
	if !e.restIsComment(vEnd) {
		return errLayout
	}
	childIndent := indent + 2
	if v.Kind == yaml.MappingNode && !isFlow(v) && v.Line > k.Line {
		childIndent = v.Column - 1
	}
	inline := renderInline(n)
	block := n.Kind != yaml.ScalarNode && !isFlow(n) && len(n.Content) > 0
	if v.Line == k.Line {
		vStart := e.offset(v)
		lineStart, lineEnd := e.lineStart(vStart), e.lineEnd(vEnd)
		comment := e.comment(vEnd, lineEnd)
		if !block {
			if vStart == colon {
				inline = " " + inline
			}
			e.replace(vStart, lineEnd, inline+comment.after(string(e.src[lineStart:vStart])+inline))
			return nil
		}
		// The key keeps its line and comment; the value moves below it.
		e.replace(colon, lineEnd, comment.after(string(e.src[lineStart:colon]))+"\n"+
			strings.TrimSuffix(renderBlock(n, childIndent), "\n"))
		return nil
	}
	keyLineEnd := e.lineEnd(colon)
	if !block {
		comment := e.comment(colon, keyLineEnd)
		e.replace(colon, vEnd, " "+inline+comment.after(string(e.src[e.lineStart(colon):colon])+" "+inline))
		return nil
	}
	e.replace(keyLineEnd, vEnd, "\n"+strings.TrimSuffix(renderBlock(n, childIndent), "\n"))
	return nil
}

// lineComment is the comment ending a line, and the column it starts at.
type lineComment struct {
	text   string
	column int
}

// comment returns the comment in src[from:lineEnd], which holds only
// spaces and perhaps a comment.
func (e *editor) comment(from, lineEnd int) lineComment {
	tail := e.src[from:lineEnd]
	text := bytes.TrimLeft(tail, " \t")
	if len(text) == 0 {
		return lineComment{}
	}
	at := lineEnd - len(text)
	return lineComment{string(text), utf8.RuneCount(e.src[e.lineStart(at):at])}
}

// after renders the comment following prefix on its line, at its old
// column when prefix leaves room.
func (c lineComment) after(prefix string) string {
	if c.text == "" {
		return ""
	}
	return strings.Repeat(" ", max(1, c.column-utf8.RuneCountInString(prefix))) + c.text
}

// editBlockList turns block list v into n by deleting the lines of the
// items n drops and appending lines for the items it adds, so the items
// kept keep their lines and comments. ok is false when n is not v minus
// some items plus some at the end, or an item spans lines.
func (e *editor) editBlockList(v, n *yaml.Node, indent int) (ok bool, err error) {
	for _, item := range append(slices.Clone(v.Content), n.Content...) {
		if item.Kind != yaml.ScalarNode {
			return false, nil
		}
	}
	p := 0
	var drop []*yaml.Node
	for _, item := range v.Content {
		if p < len(n.Content) && n.Content[p].Value == item.Value {
			p++
			continue
		}
		drop = append(drop, item)
	}
	dash := v.Column - 1
	lastEnd := 0
	for _, item := range v.Content {
		start := e.offset(item)
		lead := strings.TrimLeft(string(e.src[e.lineStart(start):start]), " ")
		if strings.TrimRight(lead, " ") != "-" {
			return false, nil
		}
		end, err := e.end(item, dash)
		if err != nil {
			return false, err
		}
		if !e.restIsComment(end) {
			return false, nil
		}
		lastEnd = end
		if slices.Contains(drop, item) {
			e.replace(e.lineStart(start), e.nextLine(end), "")
		}
	}
	var add strings.Builder
	for _, item := range n.Content[p:] {
		fmt.Fprintf(&add, "%s- %s\n", strings.Repeat(" ", dash), renderScalar(item.Value))
	}
	if add.Len() > 0 {
		e.insertAt(e.nextLine(lastEnd), add.String())
	}
	return true, nil
}

// renderEntry renders path: value as block lines at indent.
func renderEntry(path []string, value *yaml.Node, indent int) string {
	n := value
	for i := len(path) - 1; i > 0; i-- {
		n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{Str(path[i]), n}}
	}
	return renderBlock(&yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{Str(path[0]), n}}, indent)
}

// renderBlock renders a block mapping or list, one entry a line.
func renderBlock(n *yaml.Node, indent int) string {
	var b strings.Builder
	pad := strings.Repeat(" ", indent)
	if n.Kind == yaml.SequenceNode {
		for _, item := range n.Content {
			fmt.Fprintf(&b, "%s- %s\n", pad, renderInline(item))
		}
		return b.String()
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind != yaml.ScalarNode && !isFlow(v) && len(v.Content) > 0 {
			fmt.Fprintf(&b, "%s%s:\n%s", pad, renderScalar(k.Value), renderBlock(v, indent+2))
			continue
		}
		if isNull(v) {
			fmt.Fprintf(&b, "%s%s:\n", pad, renderScalar(k.Value))
			continue
		}
		fmt.Fprintf(&b, "%s%s: %s\n", pad, renderScalar(k.Value), renderInline(v))
	}
	return b.String()
}

// renderInline renders n on one line, collections in flow style.
func renderInline(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		parts := make([]string, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			parts = append(parts, renderScalar(n.Content[i].Value)+": "+renderInline(n.Content[i+1]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case yaml.SequenceNode:
		parts := make([]string, 0, len(n.Content))
		for _, item := range n.Content {
			parts = append(parts, renderInline(item))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	if isNull(n) {
		return "null"
	}
	if n.Tag != "!!str" && n.Tag != "" {
		return n.Value // an int, bool, ... kept as written
	}
	return renderScalar(n.Value)
}

var plainPattern = regexp.MustCompile(`^[A-Za-z0-9_./][A-Za-z0-9_./-]*( [A-Za-z0-9_./-]+)*$`)

// renderScalar writes s plain when that reads back as the same string in
// block and flow context alike, and double-quoted otherwise.
func renderScalar(s string) string {
	if plainPattern.MatchString(s) {
		var back any
		if yaml.Unmarshal([]byte(s), &back) == nil && back == s {
			return s
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a JSON string is a YAML double-quoted scalar
	return strings.TrimSuffix(b.String(), "\n")
}

// EditFile applies edit to the config file at path and replaces the file
// atomically, but only once the result loads and validates (Load, on a
// temporary copy beside it); otherwise the file is left untouched and the
// error names the key at fault. It returns the config as now in force.
func EditFile(path string, edit func(*Document) error) (*Config, error) {
	s, err := stageEdit(path, edit)
	if err != nil {
		return nil, err
	}
	defer s.discard()
	if s.tmp == "" {
		return s.cfg, nil // nothing to change
	}
	// Refuse to overwrite a change someone made meanwhile.
	if now, err := os.ReadFile(s.abs); err != nil || !bytes.Equal(now, s.src) {
		return nil, fmt.Errorf("config %s changed while it was being edited; nothing written, try again", s.abs)
	}
	// Replace the file a symlink points at, not the symlink.
	real, err := filepath.EvalSymlinks(s.abs)
	if err != nil {
		return nil, err
	}
	tmp := s.tmp
	if filepath.Dir(real) != filepath.Dir(s.abs) {
		if tmp, err = writeTemp(filepath.Dir(real), s.edited, s.perm); err != nil {
			return nil, fmt.Errorf("config %s: %w", real, err)
		}
		defer os.Remove(tmp)
	}
	if err := os.Rename(tmp, real); err != nil {
		return nil, fmt.Errorf("config %s: %w", real, err)
	}
	return s.cfg, nil
}

// CheckEdit reports whether EditFile(path, edit) would be accepted, writing
// nothing: the same edit, loaded and validated the same way, so that a
// caller can offer only a change the file will take (a permission prompt's
// "allow always"). The file may still change before the edit is made.
func CheckEdit(path string, edit func(*Document) error) error {
	s, err := stageEdit(path, edit)
	if err == nil {
		s.discard()
	}
	return err
}

// DiffEdit is CheckEdit that also returns the edit as a unified diff of the
// file (Diff): what a person approving the edit reads before EditFile
// makes it. "" when the edit changes nothing.
func DiffEdit(path string, edit func(*Document) error) (string, error) {
	s, err := stageEdit(path, edit)
	if err != nil {
		return "", err
	}
	s.discard()
	return Diff(filepath.Base(s.abs), s.src, s.edited), nil
}

// stagedEdit is an edit of a config file, validated and not yet applied.
type stagedEdit struct {
	abs    string      // the file
	src    []byte      // its content when read
	edited []byte      // the content after the edit
	perm   os.FileMode // the file's permissions
	tmp    string      // the edited copy beside the file; "" when unchanged
	cfg    *Config     // the edited config, loaded and validated
}

// stageEdit reads the file at path, applies edit, and loads the result from
// a temporary copy beside the file, so that relative paths in it resolve
// the same way. The caller discards the copy.
func stageEdit(path string, edit func(*Document) error) (*stagedEdit, error) {
	if path == "" {
		return nil, errors.New("no config file: create config.yaml or pass --config")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	doc, err := ParseDocument(src)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", abs, err)
	}
	if err := edit(doc); err != nil {
		return nil, fmt.Errorf("config %s: %w", abs, err)
	}
	s := &stagedEdit{abs: abs, src: src, edited: doc.Bytes()}
	if bytes.Equal(s.edited, src) {
		if s.cfg, err = Load(abs); err != nil {
			return nil, err
		}
		return s, nil
	}
	info, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	s.perm = info.Mode().Perm()
	// The file is replaced by a rename, which its own mode does not stop
	// (nor does it stop root): a config made read-only is kept as it is.
	if s.perm&0o222 == 0 {
		return nil, fmt.Errorf("config %s is read-only (mode %#o): nothing written; make it writable to change it", abs, s.perm)
	}
	if s.tmp, err = writeTemp(filepath.Dir(abs), s.edited, s.perm); err != nil {
		return nil, fmt.Errorf("config %s: %w", abs, err)
	}
	// The copy's problems are named as the file it edits. When the file
	// has them already, they are reported at its own lines, which the user
	// can find; else they are the change's, at the lines it would have.
	cfg, err := load(s.tmp, path)
	if err != nil {
		s.discard()
		if _, own := load(abs, path); own != nil {
			return nil, fmt.Errorf("%s: change refused, file unchanged; fix the file first:\n%w", path, own)
		}
		return nil, fmt.Errorf("%s: change refused, file unchanged:\n%w", path, err)
	}
	cfg.File = abs
	s.cfg = cfg
	return s, nil
}

// discard removes the edited copy.
func (s *stagedEdit) discard() {
	if s.tmp != "" {
		os.Remove(s.tmp)
	}
}

// writeTemp writes data to a new file in dir, synced, and returns its path.
// The name does not end in .yaml or .wasm, so no watcher takes it for a
// config or a module.
func writeTemp(dir string, data []byte, perm os.FileMode) (string, error) {
	f, err := os.CreateTemp(dir, ".warden-edit-*.tmp")
	if err != nil {
		return "", err
	}
	name := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}
