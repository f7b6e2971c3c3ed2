package schemabound

import (
	"encoding/json"
	"fmt"
	"math"
)

// Cost model. One unit is about one evaluation of a subschema on a value by
// jsonschema-go (a few hundred nanoseconds); everything else is converted to
// units with the constants below, measured with the tool package's
// BenchmarkBudgetMax (a budget's worth of units takes well under a second).
const (
	// bytesPerUnit: building and copying error text (fmt of the value,
	// wrapping by every enclosing evaluation).
	bytesPerUnit = 128
	// regexBytesPerUnit: matching one byte against one regexp instruction.
	regexBytesPerUnit = 64
	// maxCost saturates every sum: costs of exponential schemas do not
	// overflow, they stay over any budget.
	maxCost = math.MaxInt64 / 4
)

func satAdd(a, b int64) int64 {
	if a > maxCost-b {
		return maxCost
	}
	return a + b
}

// LimitError says that validating a value would pass a bound. Steps is the
// work the pre-pass did before it stopped.
type LimitError struct {
	Reason string
	Steps  int64
}

func (e *LimitError) Error() string { return e.Reason }

// Stats describe one Check.
type Stats struct {
	Steps      int64 // evaluations the pre-pass made (memoised ones count once each)
	Cost       int64 // units the validation would cost, at most
	EvalDepth  int   // deepest nesting of the validator's recursion
	ErrorBytes int64 // bound on the error report's size
}

const (
	kNull uint8 = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

// value is one JSON value of the instance, indexed.
type value struct {
	kind     uint8
	str      int64 // bytes of a string
	kids     []int32
	keys     []string // object keys, parallel to kids
	keyNodes []int32  // string values of the keys (for propertyNames)
	byKey    map[string]int32
	print    int64 // bytes of fmt's %v of the value
	nodes    int64 // values in the subtree
}

type instance struct {
	vals []value
}

// build indexes v, refusing nesting past maxDepth. v must be a JSON value as
// encoding/json decodes into any (json.Number allowed).
func (in *instance) build(v any, depth, maxDepth int, names bool) (int32, error) {
	if depth > maxDepth {
		return 0, &LimitError{Reason: fmt.Sprintf("the value nests more than %d levels deep", maxDepth)}
	}
	i := int32(len(in.vals))
	in.vals = append(in.vals, value{})
	var x value
	switch v := v.(type) {
	case nil:
		x = value{kind: kNull, print: 5, nodes: 1}
	case bool:
		x = value{kind: kBool, print: 5, nodes: 1}
	case float64:
		x = value{kind: kNumber, print: 24, nodes: 1}
	case json.Number:
		x = value{kind: kNumber, print: int64(len(v)) + 24, nodes: 1}
	case string:
		x = value{kind: kString, str: int64(len(v)), print: int64(len(v)), nodes: 1}
	case []any:
		x = value{kind: kArray, print: 2, nodes: 1, kids: make([]int32, 0, len(v))}
		for _, e := range v {
			c, err := in.build(e, depth+1, maxDepth, names)
			if err != nil {
				return 0, err
			}
			x.kids = append(x.kids, c)
			x.print += in.vals[c].print + 1
			x.nodes += in.vals[c].nodes
		}
	case map[string]any:
		x = value{kind: kObject, print: 5, nodes: 1, kids: make([]int32, 0, len(v)), keys: make([]string, 0, len(v))}
		for k, e := range v {
			c, err := in.build(e, depth+1, maxDepth, names)
			if err != nil {
				return 0, err
			}
			x.keys = append(x.keys, k)
			x.kids = append(x.kids, c)
			x.print += int64(len(k)) + 2 + in.vals[c].print
			x.nodes += in.vals[c].nodes
		}
		if len(x.keys) > 8 {
			x.byKey = make(map[string]int32, len(x.keys))
			for j, k := range x.keys {
				x.byKey[k] = x.kids[j]
			}
		}
		if names {
			for _, k := range x.keys {
				x.keyNodes = append(x.keyNodes, int32(len(in.vals)))
				in.vals = append(in.vals, value{kind: kString, str: int64(len(k)), print: int64(len(k)), nodes: 1})
			}
		}
	default:
		return 0, fmt.Errorf("a %T is not a decoded JSON value", v)
	}
	in.vals[i] = x
	return i, nil
}

func (x *value) child(key string) (int32, bool) {
	if x.byKey != nil {
		c, ok := x.byKey[key]
		return c, ok
	}
	for j, k := range x.keys {
		if k == key {
			return x.kids[j], true
		}
	}
	return 0, false
}

// result is what evaluating one subschema on one value costs.
type result struct {
	cost   int64
	errLen int64 // bound on the error text it may return
	height int32 // validator frames, itself included
}

type checker struct {
	g     *Graph
	in    instance
	memo  map[uint64]result
	steps int64
}

// Check measures validating v against the schema, without validating: it
// walks (subschema, value) pairs as jsonschema-go will, memoising shared
// subschemas, so it runs in time polynomial in the schema and the value, and
// stops as soon as the cost passes the budget. A *LimitError says which
// bound v would pass; any other error means v is not a JSON value.
func (g *Graph) Check(v any) (Stats, error) {
	c := &checker{g: g}
	root, err := c.in.build(v, 0, g.lim.MaxInstanceDepth, g.usesNames)
	if err != nil {
		return Stats{}, err
	}
	r, err := c.eval(0, root, 1)
	st := Stats{Steps: c.steps, Cost: r.cost, EvalDepth: int(r.height), ErrorBytes: r.errLen}
	if err != nil {
		if le, ok := err.(*LimitError); ok {
			le.Steps = c.steps
		}
		return st, err
	}
	if r.errLen > g.lim.MaxErrorBytes {
		return st, &LimitError{Steps: c.steps, Reason: fmt.Sprintf(
			"a failed validation could build an error report of more than %d bytes", g.lim.MaxErrorBytes)}
	}
	return st, nil
}

func (c *checker) overBudget() error {
	return &LimitError{Reason: fmt.Sprintf("more than %d schema evaluation steps", c.g.lim.Budget)}
}

func (c *checker) eval(s, v int32, depth int) (result, error) {
	c.steps++
	if c.steps > c.g.lim.Budget {
		return result{}, c.overBudget()
	}
	if depth > c.g.lim.MaxEvalDepth {
		return result{}, &LimitError{Reason: fmt.Sprintf("schema evaluations nest more than %d deep", c.g.lim.MaxEvalDepth)}
	}
	n := &c.g.nodes[s]
	key := uint64(s)<<32 | uint64(uint32(v))
	if n.shared {
		if r, ok := c.memo[key]; ok {
			if depth+int(r.height)-1 > c.g.lim.MaxEvalDepth {
				return result{}, &LimitError{Reason: fmt.Sprintf("schema evaluations nest more than %d deep", c.g.lim.MaxEvalDepth)}
			}
			return r, nil
		}
	}
	x := &c.in.vals[v]
	cost := n.weight
	own := n.msg
	if n.prints {
		own = satAdd(own, x.print)
	}
	switch x.kind {
	case kString:
		if n.strLen {
			cost += x.str / bytesPerUnit
			own += 6 * x.str
		}
		if n.pattern > 0 {
			cost = satAdd(cost, x.str*n.pattern/regexBytesPerUnit)
			own += 6 * x.str
		}
	case kArray:
		if n.arrayKw || len(n.inPlace) > 0 {
			cost += int64(len(x.kids))
		}
		if n.uniqueItem {
			cost = satAdd(cost, x.nodes)
		}
	case kObject:
		if n.objectKw || len(n.inPlace) > 0 {
			cost += int64(len(x.kids))
		}
		if n.additionalNo {
			for _, k := range x.keys {
				own += 6*int64(len(k)) + 3
			}
		}
	}
	if cost > c.g.lim.Budget {
		return result{}, c.overBudget()
	}
	var height int32
	var childErr, anyOfErr int64
	add := func(to, val int32, anyOf bool) error {
		r, err := c.eval(to, val, depth+1)
		if err != nil {
			return err
		}
		cost = satAdd(cost, r.cost)
		height = max(height, r.height)
		if anyOf {
			anyOfErr = satAdd(anyOfErr, r.errLen+1)
		} else {
			childErr = max(childErr, r.errLen)
		}
		if cost > c.g.lim.Budget {
			return c.overBudget()
		}
		return nil
	}
	for _, e := range n.inPlace {
		if err := add(e.to, v, e.anyOf); err != nil {
			return result{}, err
		}
	}
	switch x.kind {
	case kArray:
		for j, item := range x.kids {
			switch {
			case j < len(n.prefix):
				if err := add(n.prefix[j], item, false); err != nil {
					return result{}, err
				}
			case n.rest != noNode:
				if err := add(n.rest, item, false); err != nil {
					return result{}, err
				}
			}
			for _, to := range []int32{n.contains, n.unevalItems} {
				if to != noNode {
					if err := add(to, item, false); err != nil {
						return result{}, err
					}
				}
			}
		}
	case kObject:
		for name, prop := range n.props {
			if val, ok := x.child(name); ok {
				if err := add(prop, val, false); err != nil {
					return result{}, err
				}
			}
		}
		for j, k := range x.keys {
			val := x.kids[j]
			matched := n.props != nil && hasKey(n.props, k)
			for _, p := range n.patterns {
				cost = satAdd(cost, 1+int64(len(k))*p.prog/regexBytesPerUnit)
				if cost > c.g.lim.Budget {
					return result{}, c.overBudget()
				}
				if p.re.MatchString(k) {
					matched = true
					if err := add(p.to, val, false); err != nil {
						return result{}, err
					}
				}
			}
			if !matched && n.additional != noNode && !n.additionalNo {
				if err := add(n.additional, val, false); err != nil {
					return result{}, err
				}
			}
			if n.unevalProps != noNode {
				if err := add(n.unevalProps, val, false); err != nil {
					return result{}, err
				}
			}
			if n.propertyNames != noNode {
				if err := add(n.propertyNames, x.keyNodes[j], false); err != nil {
					return result{}, err
				}
			}
		}
	}
	errLen := max(own, childErr)
	if n.anyOfList > 0 {
		errLen = max(errLen, satAdd(n.anyOfList, anyOfErr))
	}
	errLen = satAdd(errLen, n.ptrLen+16)
	cost = satAdd(cost, errLen/bytesPerUnit)
	if cost > c.g.lim.Budget {
		return result{}, c.overBudget()
	}
	r := result{cost: cost, errLen: errLen, height: height + 1}
	if n.shared {
		if c.memo == nil {
			c.memo = map[uint64]result{}
		}
		c.memo[key] = r
	}
	return r, nil
}

func hasKey(m map[string]int32, k string) bool { _, ok := m[k]; return ok }

// size is the count of JSON values in a schema keyword's value (enum,
// const) and the bytes fmt prints for it.
type size struct{ nodes, print int64 }

func valueSize(v any) size {
	switch v := v.(type) {
	case []any:
		s := size{1, 2}
		for _, e := range v {
			c := valueSize(e)
			s.nodes += c.nodes
			s.print += c.print + 1
		}
		return s
	case map[string]any:
		s := size{1, 5}
		for k, e := range v {
			c := valueSize(e)
			s.nodes += c.nodes
			s.print += c.print + int64(len(k)) + 2
		}
		return s
	case string:
		return size{1, int64(len(v))}
	default:
		return size{1, 24}
	}
}
