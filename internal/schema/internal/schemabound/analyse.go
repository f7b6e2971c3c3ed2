// Package schemabound bounds what validating against a guest-chosen JSON
// Schema may cost. jsonschema-go (the validator warden uses) recurses without
// a limit and without a step budget: a cycle of in-place applicators ("allOf":
// [{"$ref": "#"}]) overflows the Go stack, which kills the process, and
// branching applicators nested through $defs run in exponential time. This
// package refuses the first at load (Analyse) and measures the second before
// every validation (Graph.Check), so that jsonschema-go only ever runs on a
// schema and an instance whose cost is known to be small.
//
// The analysis walks the schema as jsonschema-go decoded it (not the raw
// JSON), so that it sees exactly the keywords the validator will apply:
// encoding/json matches keywords case-insensitively, and "ALLOF" is allOf to
// the validator.
package schemabound

import (
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Limits bound a schema at load and every validation against it.
type Limits struct {
	MaxBytes     int // raw schema document
	MaxJSONDepth int // nesting of the raw JSON document (objects and arrays)
	// MaxNestedBytes bounds the sum of the sizes of all JSON objects of the
	// document, which is what decoding it into a jsonschema.Schema costs.
	MaxNestedBytes  int64
	MaxNodes        int   // subschemas, the root included
	MaxSchemaDepth  int   // subschemas nested in subschemas
	MaxPointerBytes int64 // the JSON pointers of all subschemas together
	MaxChain        int   // longest chain of in-place applicators
	// Budget is the evaluation units one validation may cost (see cost.go).
	Budget int64
	// MaxInstanceDepth bounds the nesting of the value validated.
	MaxInstanceDepth int
	// MaxEvalDepth bounds the validator's recursion (schema and value together).
	MaxEvalDepth int
	// MaxErrorBytes bounds the error report the validator may build.
	MaxErrorBytes int64
}

// DefaultLimits are the limits warden applies to tool schemas.
func DefaultLimits() Limits {
	return Limits{
		MaxBytes:         256 << 10,
		MaxJSONDepth:     256,
		MaxNestedBytes:   4 << 20,
		MaxNodes:         10_000,
		MaxSchemaDepth:   128,
		MaxPointerBytes:  4 << 20,
		MaxChain:         256,
		Budget:           1 << 18,
		MaxInstanceDepth: 128,
		MaxEvalDepth:     2048,
		MaxErrorBytes:    16 << 20,
	}
}

type draft int

const (
	draft2020 draft = iota
	draft7
)

const noNode = -1

// edge is an in-place applicator: the child validates the same value.
type edge struct {
	to    int32
	via   string // the keyword, for messages: "$ref", "allOf/0", ...
	anyOf bool   // its error joins its siblings' (anyOf collects every failure)
}

type patternEdge struct {
	re   *regexp.Regexp
	prog int64 // instructions of the compiled program: the cost of matching one byte
	to   int32
}

// node is one subschema and what validating a value against it applies.
type node struct {
	s      *jsonschema.Schema
	parent int32
	seg    string // pointer segments from the parent, escaped: "/allOf/0"
	ptrLen int64  // length of the JSON pointer, "root" for the root
	depth  int

	inPlace []edge
	// Applicators to the value's children.
	props         map[string]int32
	patterns      []patternEdge
	additional    int32
	additionalNo  bool // additionalProperties is false: lists the extra names
	propertyNames int32
	unevalProps   int32
	prefix        []int32 // prefixItems (draft 7: the items array)
	rest          int32   // items after prefix (draft 7: additionalItems, or items)
	contains      int32
	unevalItems   int32

	weight     int64 // fixed units of one evaluation
	prints     bool  // a failure message prints the value (type, enum, const, contains)
	msg        int64 // fixed bytes of its failure messages
	anyOfList  int64 // bytes of "anyOf: did not validate against any of [...]"
	strLen     bool  // minLength/maxLength: counts runes of a string value
	pattern    int64 // instructions of the pattern's program; 0 without pattern
	uniqueItem bool
	objectKw   bool // has keywords that look at an object's properties
	arrayKw    bool // has keywords that look at an array's items
	shared     bool // a $ref target: may be reached by several paths, memoised
}

// Graph is an analysed schema: every subschema and the applicator edges
// between them, with every $ref resolved.
type Graph struct {
	lim   Limits
	draft draft
	nodes []node
	index map[*jsonschema.Schema]int32
	// anchors maps $anchor (draft 7: "$id": "#name") to its subschema.
	anchors map[string]int32
	rootURI *url.URL
	// static is each node's cost on a value with no children; chain its
	// longest in-place chain.
	static    []int64
	chain     []int32
	usesNames bool
}

// CheckRaw checks the raw schema document's size and nesting. It must pass
// before the document is decoded: jsonschema-go decodes recursively, and
// re-reads each subschema once per level above it.
func CheckRaw(raw []byte, lim Limits) error {
	if len(raw) > lim.MaxBytes {
		return fmt.Errorf("is %d bytes, over the limit of %d", len(raw), lim.MaxBytes)
	}
	var objects []bool // per open container: is it an object
	depth, nested := int64(0), int64(0)
	inString, escaped := false, false
	for _, c := range raw {
		nested += depth
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if len(objects) == lim.MaxJSONDepth {
				return fmt.Errorf("nests JSON objects and arrays more than %d deep", lim.MaxJSONDepth)
			}
			objects = append(objects, c == '{')
			if c == '{' {
				depth++
				nested++
			}
		case c == '}' || c == ']':
			if len(objects) > 0 {
				if objects[len(objects)-1] {
					depth--
				}
				objects = objects[:len(objects)-1]
			}
		}
		if nested > lim.MaxNestedBytes {
			return fmt.Errorf("nests too much: its objects' sizes add up to more than %d bytes (each byte counts once per object around it); "+
				"move deep subschemas to $defs, or shrink large enum/const/default values", lim.MaxNestedBytes)
		}
	}
	return nil
}

// Analyse builds the Graph of s, which jsonschema-go decoded from a document
// CheckRaw accepted. It refuses what the validator cannot run safely, naming
// the subschema by its JSON pointer.
func Analyse(s *jsonschema.Schema, lim Limits) (*Graph, error) {
	g := &Graph{lim: lim, index: map[*jsonschema.Schema]int32{}, anchors: map[string]int32{}}
	switch s.Schema {
	case "", "https://json-schema.org/draft/2020-12/schema":
	case "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#":
		g.draft = draft7
	default:
		return nil, fmt.Errorf(`$schema %q is not supported: use "https://json-schema.org/draft/2020-12/schema" (the default) or "http://json-schema.org/draft-07/schema#"`, s.Schema)
	}
	if err := g.collect(s); err != nil {
		return nil, err
	}
	if err := g.ids(); err != nil {
		return nil, err
	}
	for i := range g.nodes {
		if err := g.link(int32(i)); err != nil {
			return nil, err
		}
	}
	if err := g.acyclic(); err != nil {
		return nil, err
	}
	if err := g.measure(); err != nil {
		return nil, err
	}
	return g, nil
}

// Pointer returns the JSON pointer of node i as a URI fragment ("#/allOf/0").
func (g *Graph) Pointer(i int32) string {
	var segs []string
	for ; i > 0; i = g.nodes[i].parent {
		segs = append(segs, g.nodes[i].seg)
	}
	slices.Reverse(segs)
	return "#" + strings.Join(segs, "")
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// collect numbers every subschema depth-first and checks the counts.
func (g *Graph) collect(root *jsonschema.Schema) error {
	var pointerBytes int64
	var walk func(s *jsonschema.Schema, parent int32, seg string, depth int) error
	walk = func(s *jsonschema.Schema, parent int32, seg string, depth int) error {
		if s == nil {
			return fmt.Errorf("%s%s: a subschema must be an object or a boolean", g.Pointer(parent), seg)
		}
		if len(g.nodes) >= g.lim.MaxNodes {
			return fmt.Errorf("has more than %d subschemas", g.lim.MaxNodes)
		}
		if depth > g.lim.MaxSchemaDepth {
			return fmt.Errorf("%s: subschemas nest more than %d deep", g.Pointer(parent), g.lim.MaxSchemaDepth)
		}
		if _, dup := g.index[s]; dup {
			return fmt.Errorf("%s%s: the same subschema appears twice", g.Pointer(parent), seg)
		}
		i := int32(len(g.nodes))
		n := node{s: s, parent: parent, seg: seg, depth: depth, ptrLen: 4,
			additional: noNode, propertyNames: noNode, unevalProps: noNode, rest: noNode, contains: noNode, unevalItems: noNode}
		if parent >= 0 {
			n.ptrLen = g.nodes[parent].ptrLen + int64(len(seg))
			if parent == 0 {
				n.ptrLen = int64(len(seg))
			}
		}
		pointerBytes += n.ptrLen
		if pointerBytes > g.lim.MaxPointerBytes {
			return fmt.Errorf("the JSON pointers of its subschemas add up to more than %d bytes: shorten property names or nest less", g.lim.MaxPointerBytes)
		}
		g.nodes = append(g.nodes, n)
		g.index[s] = i
		var err error
		eachChild(s, func(seg string, c *jsonschema.Schema) bool {
			err = walk(c, i, seg, depth+1)
			return err == nil
		})
		return err
	}
	return walk(root, noNode, "", 0)
}

// eachChild calls f with every subschema field of s and its pointer
// segments, in a fixed order, until f returns false. It covers every field
// of type *Schema, []*Schema and map[string]*Schema (TestEveryChildField).
func eachChild(s *jsonschema.Schema, f func(seg string, c *jsonschema.Schema) bool) {
	one := func(name string, c *jsonschema.Schema) bool {
		return c == nil || f("/"+name, c)
	}
	many := func(name string, cs []*jsonschema.Schema) bool {
		for i, c := range cs {
			if !f("/"+name+"/"+strconv.Itoa(i), c) {
				return false
			}
		}
		return true
	}
	keyed := func(name string, m map[string]*jsonschema.Schema) bool {
		for _, k := range sortedKeys(m) {
			if !f("/"+name+"/"+pointerEscaper.Replace(k), m[k]) {
				return false
			}
		}
		return true
	}
	_ = keyed("$defs", s.Defs) && keyed("definitions", s.Definitions) && keyed("dependencies", s.DependencySchemas) &&
		many("prefixItems", s.PrefixItems) && one("items", s.Items) && many("items", s.ItemsArray) &&
		one("additionalItems", s.AdditionalItems) && one("contains", s.Contains) && one("unevaluatedItems", s.UnevaluatedItems) &&
		keyed("properties", s.Properties) && keyed("patternProperties", s.PatternProperties) &&
		one("additionalProperties", s.AdditionalProperties) && one("propertyNames", s.PropertyNames) &&
		one("unevaluatedProperties", s.UnevaluatedProperties) &&
		many("allOf", s.AllOf) && many("anyOf", s.AnyOf) && many("oneOf", s.OneOf) && one("not", s.Not) &&
		one("if", s.If) && one("then", s.Then) && one("else", s.Else) &&
		keyed("dependentSchemas", s.DependentSchemas) && one("contentSchema", s.ContentSchema)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ids checks $id, $anchor and the refusals that need no reference: only the
// root may set a base URI, and dynamic references are not supported.
func (g *Graph) ids() error {
	for i := range g.nodes {
		n := &g.nodes[i]
		s := n.s
		at := g.Pointer(int32(i))
		if s.DynamicRef != "" {
			return fmt.Errorf(`%s: "$dynamicRef" is not supported: use "$ref" to a "$defs" entry or an "$anchor"`, at)
		}
		for _, k := range []string{"$recursiveRef", "$recursiveAnchor"} {
			if _, ok := s.Extra[k]; ok {
				return fmt.Errorf(`%s: %q (draft 2019-09) is not supported: use "$ref" to a "$defs" entry or an "$anchor"`, at, k)
			}
		}
		if s.ID != "" && !(g.draft == draft7 && s.Ref != "") {
			u, err := url.Parse(s.ID)
			if err != nil {
				return fmt.Errorf("%s: $id %q: %v", at, s.ID, err)
			}
			switch {
			case g.draft == draft7 && u.Fragment != "":
				// Draft 7 names a subschema with "$id": "#name", as 2020-12 does with $anchor.
				name := strings.TrimPrefix(s.ID, "#")
				if _, dup := g.anchors[name]; !dup {
					g.anchors[name] = int32(i)
				}
			case i != 0:
				return fmt.Errorf(`%s: "$id" %q inside the schema is not supported: name the subschema with "$anchor" and refer to it with "$ref": "#name"`, at, s.ID)
			default:
				g.rootURI = u
			}
		}
		if g.draft == draft2020 {
			for _, a := range []string{s.Anchor, s.DynamicAnchor} {
				if a == "" {
					continue
				}
				if j, dup := g.anchors[a]; dup {
					return fmt.Errorf("%s: anchor %q is already defined at %s", at, a, g.Pointer(j))
				}
				g.anchors[a] = int32(i)
			}
		}
	}
	if g.rootURI == nil {
		g.rootURI = &url.URL{}
	}
	return nil
}

// resolve finds the subschema ref names, as jsonschema-go does, and refuses
// anything outside this document.
func (g *Graph) resolve(from int32, ref string) (int32, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return 0, fmt.Errorf("$ref %q: %v", ref, err)
	}
	u = g.rootURI.ResolveReference(u)
	frag := u.Fragment
	doc := *u
	doc.Fragment, doc.RawFragment = "", ""
	if d := doc.String(); d != "" && d != g.rootURI.String() {
		return 0, fmt.Errorf("$ref %q refers outside this schema (%s): only references within the schema are allowed, such as \"#/$defs/name\" or \"#name\" for an \"$anchor\"", ref, d)
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		i, ok := g.anchors[frag]
		if !ok {
			return 0, fmt.Errorf("$ref %q: no anchor %q in this schema", ref, frag)
		}
		return i, nil
	}
	i, err := g.dereference(frag)
	if err != nil {
		return 0, fmt.Errorf("$ref %q: %w", ref, err)
	}
	return i, nil
}

// dereference follows a JSON pointer from the root through schema keywords
// only, as jsonschema-go does.
func (g *Graph) dereference(ptr string) (int32, error) {
	if ptr == "" {
		return 0, nil
	}
	segs := strings.Split(ptr[1:], "/")
	for i := range segs {
		segs[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(segs[i])
	}
	s := g.nodes[0].s
	for len(segs) > 0 {
		kw := segs[0]
		segs = segs[1:]
		var next *jsonschema.Schema
		var list []*jsonschema.Schema
		var m map[string]*jsonschema.Schema
		switch kw {
		case "items":
			if s.Items != nil {
				next = s.Items
			} else {
				list = s.ItemsArray
			}
		case "prefixItems":
			list = s.PrefixItems
		case "allOf":
			list = s.AllOf
		case "anyOf":
			list = s.AnyOf
		case "oneOf":
			list = s.OneOf
		case "$defs":
			m = s.Defs
		case "definitions":
			m = s.Definitions
		case "dependencies":
			m = s.DependencySchemas
		case "properties":
			m = s.Properties
		case "patternProperties":
			m = s.PatternProperties
		case "dependentSchemas":
			m = s.DependentSchemas
		case "additionalItems":
			next = s.AdditionalItems
		case "contains":
			next = s.Contains
		case "unevaluatedItems":
			next = s.UnevaluatedItems
		case "additionalProperties":
			next = s.AdditionalProperties
		case "propertyNames":
			next = s.PropertyNames
		case "unevaluatedProperties":
			next = s.UnevaluatedProperties
		case "not":
			next = s.Not
		case "if":
			next = s.If
		case "then":
			next = s.Then
		case "else":
			next = s.Else
		case "contentSchema":
			next = s.ContentSchema
		default:
			return 0, fmt.Errorf("%q is not a keyword holding a subschema", kw)
		}
		switch {
		case list != nil || kw == "allOf" || kw == "anyOf" || kw == "oneOf" || kw == "prefixItems" || (kw == "items" && next == nil):
			if len(segs) == 0 {
				return 0, fmt.Errorf("%q points at a list, not a subschema", kw)
			}
			idx := segs[0]
			segs = segs[1:]
			k, err := strconv.Atoi(idx)
			if err != nil || k < 0 || k >= len(list) || (len(idx) > 1 && idx[0] == '0') || idx[0] == '+' {
				return 0, fmt.Errorf("%s/%s: no such subschema", kw, idx)
			}
			next = list[k]
		case m != nil || kw == "$defs" || kw == "definitions" || kw == "dependencies" || kw == "properties" || kw == "patternProperties" || kw == "dependentSchemas":
			if len(segs) == 0 {
				return 0, fmt.Errorf("%q points at a map, not a subschema", kw)
			}
			c, ok := m[segs[0]]
			if !ok {
				return 0, fmt.Errorf("%s/%s: no such subschema", kw, segs[0])
			}
			next = c
			segs = segs[1:]
		}
		if next == nil {
			return 0, fmt.Errorf("%q: no such subschema", kw)
		}
		s = next
	}
	return g.index[s], nil
}

// link records node i's applicators and what one evaluation of it costs.
func (g *Graph) link(i int32) error {
	n := &g.nodes[i]
	s := n.s
	id := func(c *jsonschema.Schema) int32 {
		if c == nil {
			return noNode
		}
		return g.index[c]
	}
	at := g.Pointer(i)
	n.weight = 1 + (n.ptrLen+16)/bytesPerUnit
	if s.Ref != "" {
		to, err := g.resolve(i, s.Ref)
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		n.inPlace = append(n.inPlace, edge{to: to, via: "$ref"})
		g.nodes[to].shared = true
		if g.draft == draft7 {
			return nil // draft 7 ignores every keyword beside $ref
		}
	}
	many := func(kw string, cs []*jsonschema.Schema, anyOf bool) {
		for k, c := range cs {
			n.inPlace = append(n.inPlace, edge{to: id(c), via: kw + "/" + strconv.Itoa(k), anyOf: anyOf})
		}
	}
	many("allOf", s.AllOf, false)
	many("anyOf", s.AnyOf, true)
	many("oneOf", s.OneOf, false)
	for _, kc := range []struct {
		kw string
		c  *jsonschema.Schema
	}{{"not", s.Not}, {"if", s.If}, {"then", s.Then}, {"else", s.Else}} {
		if kc.c != nil {
			n.inPlace = append(n.inPlace, edge{to: id(kc.c), via: kc.kw})
		}
	}
	deps := s.DependentSchemas
	kw := "dependentSchemas"
	if g.draft == draft7 {
		deps, kw = s.DependencySchemas, "dependencies"
	}
	for _, k := range sortedKeys(deps) {
		n.inPlace = append(n.inPlace, edge{to: id(deps[k]), via: kw + "/" + pointerEscaper.Replace(k)})
	}
	if len(s.AnyOf) > 0 {
		n.anyOfList = 64 + listBytes(s.AnyOf)
	}
	if len(s.OneOf) > 0 {
		n.msg += 64 + 2*listBytes(s.OneOf)
	}

	// Applicators to children.
	if len(s.Properties) > 0 {
		n.props = make(map[string]int32, len(s.Properties))
		for k, c := range s.Properties {
			n.props[k] = id(c)
		}
	}
	for _, k := range sortedKeys(s.PatternProperties) {
		re, prog, err := compile(k)
		if err != nil {
			return fmt.Errorf("%s: patternProperties %q: %v", at, k, err)
		}
		n.patterns = append(n.patterns, patternEdge{re: re, prog: prog, to: id(s.PatternProperties[k])})
	}
	n.additional = id(s.AdditionalProperties)
	if a := s.AdditionalProperties; a != nil && a.Not != nil && isEmpty(a.Not) {
		n.additionalNo = true
	}
	n.propertyNames = id(s.PropertyNames)
	if n.propertyNames != noNode {
		g.usesNames = true
	}
	n.unevalProps = id(s.UnevaluatedProperties)
	if g.draft == draft7 {
		if s.ItemsArray != nil {
			for _, c := range s.ItemsArray {
				n.prefix = append(n.prefix, id(c))
			}
			n.rest = id(s.AdditionalItems)
		} else {
			n.rest = id(s.Items)
		}
	} else {
		for _, c := range s.PrefixItems {
			n.prefix = append(n.prefix, id(c))
		}
		n.rest = id(s.Items)
	}
	n.contains = id(s.Contains)
	n.unevalItems = id(s.UnevaluatedItems)

	// What one evaluation costs beside its children.
	n.prints = s.Type != "" || len(s.Types) > 0 || s.Enum != nil || s.Const != nil || s.Contains != nil
	if s.Enum != nil {
		v := valueSize(s.Enum)
		n.weight += v.nodes
		n.msg += v.print
	}
	if s.Const != nil {
		v := valueSize(*s.Const)
		n.weight += v.nodes
		n.msg += v.print
	}
	n.weight += int64(len(s.Properties)) + int64(len(s.Required)) + int64(len(s.PatternProperties))
	n.msg += 128 + quotedBytes(s.Required)
	for _, req := range s.DependentRequired {
		n.weight += int64(len(req))
		n.msg += quotedBytes(req)
	}
	for _, req := range s.DependencyStrings {
		n.weight += int64(len(req))
		n.msg += quotedBytes(req)
	}
	n.strLen = s.MinLength != nil || s.MaxLength != nil
	if s.Pattern != "" {
		_, prog, err := compile(s.Pattern)
		if err != nil {
			return fmt.Errorf("%s: pattern %q: %v", at, s.Pattern, err)
		}
		n.pattern = prog
		n.msg += int64(len(s.Pattern)) * 6
	}
	n.uniqueItem = s.UniqueItems
	n.objectKw = n.props != nil || n.patterns != nil || n.additional != noNode || n.propertyNames != noNode ||
		n.unevalProps != noNode || s.MinProperties != nil || s.MaxProperties != nil || len(s.Required) > 0 ||
		len(s.DependentRequired) > 0 || len(s.DependencyStrings) > 0 || len(deps) > 0
	n.arrayKw = n.prefix != nil || n.rest != noNode || n.contains != noNode || n.unevalItems != noNode ||
		s.UniqueItems || s.MinItems != nil || s.MaxItems != nil
	return nil
}

// compile compiles a pattern as jsonschema-go does and sizes its program.
func compile(pattern string) (*regexp.Regexp, int64, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, 0, err
	}
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, 0, err
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, 0, err
	}
	return re, int64(len(prog.Inst)), nil
}

// isEmpty is jsonschema-go's test for additionalProperties: false, which it
// decodes as {"not": {}}.
func isEmpty(s *jsonschema.Schema) bool { return reflect.ValueOf(*s).IsZero() }

// listBytes is the length of fmt's %v of a []*Schema: each prints its
// $id, its anchor or "<anonymous schema>".
func listBytes(cs []*jsonschema.Schema) int64 {
	var n int64 = 2
	for _, c := range cs {
		n += int64(len(c.String())) + 1
	}
	return n
}

func quotedBytes(names []string) int64 {
	var n int64
	for _, s := range names {
		n += 6*int64(len(s)) + 3
	}
	return n
}

// acyclic refuses a cycle of in-place applicators: the validator would
// apply it to the same value forever, and overflow the Go stack.
func (g *Graph) acyclic() error {
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(g.nodes))
	type frame struct {
		node int32
		via  string
	}
	var stack []frame
	var visit func(i int32, via string) error
	visit = func(i int32, via string) error {
		color[i] = grey
		stack = append(stack, frame{i, via})
		for _, e := range g.nodes[i].inPlace {
			switch color[e.to] {
			case grey:
				start := slices.IndexFunc(stack, func(f frame) bool { return f.node == e.to })
				var b strings.Builder
				b.WriteString(g.Pointer(e.to))
				for _, f := range stack[start+1:] {
					fmt.Fprintf(&b, " -(%s)-> %s", f.via, g.Pointer(f.node))
				}
				fmt.Fprintf(&b, " -(%s)-> %s", e.via, g.Pointer(e.to))
				return fmt.Errorf("%s: the in-place applicators form a cycle, %s, which would validate the same value forever: "+
					"recursion must go through a keyword that descends into the value (properties, items, additionalProperties, ...)",
					g.Pointer(e.to), b.String())
			case white:
				if err := visit(e.to, e.via); err != nil {
					return err
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
		return nil
	}
	for i := range g.nodes {
		if color[i] == white {
			if err := visit(int32(i), ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// measure computes each node's static cost (one evaluation on a value
// without children: it applies every in-place applicator below it) and its
// longest in-place chain, and refuses a node past either bound: any value
// that reaches it would be refused at every call.
func (g *Graph) measure() error {
	g.static = make([]int64, len(g.nodes))
	g.chain = make([]int32, len(g.nodes))
	done := make([]bool, len(g.nodes))
	var visit func(i int32)
	visit = func(i int32) {
		if done[i] {
			return
		}
		n := &g.nodes[i]
		cost, chain := n.weight, int32(1)
		for _, e := range n.inPlace {
			visit(e.to)
			cost = satAdd(cost, g.static[e.to])
			chain = max(chain, 1+g.chain[e.to])
		}
		g.static[i], g.chain[i], done[i] = cost, chain, true
	}
	for i := range g.nodes {
		visit(int32(i))
		if int(g.chain[i]) > g.lim.MaxChain {
			return fmt.Errorf("%s: in-place applicators ($ref, allOf, anyOf, oneOf, not, if/then/else, dependentSchemas) nest %d deep here, over the limit of %d",
				g.Pointer(int32(i)), g.chain[i], g.lim.MaxChain)
		}
		if g.static[i] > g.lim.Budget {
			return fmt.Errorf("%s: validating any single value against this subschema takes more than %d evaluation steps: "+
				"its anyOf/oneOf/allOf branches, through $ref, multiply to %s; share less or branch less", g.Pointer(int32(i)), g.lim.Budget, humanCount(g.static[i]))
		}
	}
	return nil
}

func humanCount(n int64) string {
	if n >= maxCost {
		return "more than 2^62"
	}
	return strconv.FormatInt(n, 10)
}

// SetBudget changes the evaluation budget of later Checks (for tests).
func (g *Graph) SetBudget(units int64) { g.lim.Budget = units }
