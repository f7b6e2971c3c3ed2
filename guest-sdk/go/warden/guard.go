package warden

import (
	"encoding/json"
	"fmt"
)

// Mode is how much a tool shows, after the seeds' OutputGuard: Exploring
// (the default) is compact and capped, for a model that is still looking
// around; Focused ("detail_level": "full") pages through everything with
// offset and limit.
type Mode int

const (
	Exploring Mode = iota
	Focused
)

// Defaults of a Guard, as in the seeds.
const (
	DefaultMaxResults = 200
	DefaultLimit      = 50
)

// Guard caps what a call returns. Build it with NewGuard from the call's
// arguments, then pass every list the tool returns through Page.
type Guard struct {
	Mode Mode
	// MaxResults caps a list in Exploring mode.
	MaxResults int
	// Offset and Limit select the page in Focused mode. An explicit limit
	// also caps Exploring mode.
	Offset, Limit int
	limitSet      bool
}

// Overflow tells the model that a list was cut and how to see more. It is
// the seeds' OverflowInfo; put it in the result next to the list.
type Overflow struct {
	Shown int `json:"shown"`
	Total int `json:"total"`
	// AtLeast says Total is a lower bound: the source had more items than
	// the tool could fetch, so the list is known to be incomplete.
	AtLeast bool   `json:"at_least,omitempty"`
	Hint    string `json:"hint"`
	// NextOffset is set in Focused mode when a further page exists.
	NextOffset *int `json:"next_offset,omitempty"`
}

// NewGuard reads "detail_level", "offset" and "limit" from a call's
// arguments; other fields are ignored. "detail_level": "full" selects
// Focused mode, anything else Exploring. A negative offset or a limit below
// 1 is an "invalid_arguments" error.
func NewGuard(args json.RawMessage) (*Guard, error) {
	var a struct {
		DetailLevel string `json:"detail_level"`
		Offset      *int   `json:"offset"`
		Limit       *int   `json:"limit"`
	}
	if len(args) > 0 {
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, argsError(err)
		}
	}
	g := &Guard{MaxResults: DefaultMaxResults, Limit: DefaultLimit}
	if a.DetailLevel == "full" {
		g.Mode = Focused
	}
	if a.Offset != nil {
		if *a.Offset < 0 {
			return nil, InvalidArguments("argument \"offset\": must not be negative, got %d", *a.Offset)
		}
		g.Offset = *a.Offset
	}
	if a.Limit != nil {
		if *a.Limit < 1 {
			return nil, InvalidArguments("argument \"limit\": must be at least 1, got %d", *a.Limit)
		}
		g.Limit, g.limitSet = *a.Limit, true
	}
	return g, nil
}

// Page returns the part of items that g lets through, and an Overflow when
// some items were left out (nil when all of them are shown).
//
// Exploring: the first MaxResults items (or the explicit limit, if smaller);
// the Overflow has no NextOffset, since the model should narrow its query or
// switch to Focused mode. Focused: items[Offset:Offset+Limit]; NextOffset is
// set when items remain after the page.
func Page[T any](g *Guard, items []T, hint string) ([]T, *Overflow) {
	total := len(items)
	skip, count := g.Window()
	if g.Mode == Exploring {
		if count <= 0 || total <= count {
			return items, nil
		}
		return items[:count], &Overflow{Shown: count, Total: total, Hint: hint}
	}
	start := min(skip, total)
	end := min(start+count, total)
	page := items[start:end]
	if len(page) == total {
		return page, nil
	}
	o := &Overflow{Shown: len(page), Total: total, Hint: hint}
	if end < total {
		next := end
		o.NextOffset = &next
	}
	return page, o
}

// Window returns which items Page lets through, for a tool that produces
// items one at a time and wants to stop early: items [skip, skip+count) of
// the full sequence. (Page itself also computes the Overflow.)
func (g *Guard) Window() (skip, count int) {
	if g.Mode == Focused {
		return g.Offset, max(g.Limit, 1)
	}
	count = g.MaxResults
	if g.limitSet && g.Limit < count {
		count = g.Limit
	}
	return 0, count
}

// paginationProperties are the input-schema properties NewGuard reads.
var paginationProperties = map[string]any{
	"detail_level": map[string]any{"type": "string", "enum": []string{"compact", "full"},
		"description": "Omit (or \"compact\") for a capped overview; \"full\" for everything, paged with offset/limit."},
	"offset": map[string]any{"type": "integer", "minimum": 0,
		"description": "With detail_level \"full\": skip this many results (see next_offset in the overflow)."},
	"limit": map[string]any{"type": "integer", "minimum": 1,
		"description": fmt.Sprintf("Maximum results per page (default %d).", DefaultLimit)},
}

// WithPagination returns the object schema with the properties NewGuard
// reads (detail_level, offset, limit) added to its "properties", keeping any
// the schema already defines. It panics if schema is not a JSON object:
// schemas are literals in a tool's source, so that is a programming error.
func WithPagination(schema json.RawMessage) json.RawMessage {
	var s map[string]any
	if err := json.Unmarshal(schema, &s); err != nil || s == nil {
		panic(fmt.Sprintf("warden.WithPagination: schema is not a JSON object: %v", err))
	}
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	for k, v := range paginationProperties {
		if _, ok := props[k]; !ok {
			props[k] = v
		}
	}
	s["properties"] = props
	out, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("warden.WithPagination: %v", err))
	}
	return out
}
