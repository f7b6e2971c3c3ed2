package lsptool

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/warden-run/warden/guest-sdk/go/warden"
)

// Pager is a warden.Guard bound to one query, so that a continuation
// cursor it hands out continues that query and no other.
//
// A cursor's state is {"q": query, "o": offset, "l": limit}. The host seals
// it (HMAC per process, bound to the tool's name), so the state a tool reads
// back is one it wrote; what the tool still checks is that the call's
// arguments name the same query, because a client sends the arguments
// again on a continuation and a cursor silently applied to another query
// would page through the wrong list.
type Pager struct {
	*warden.Guard
	// Unit names what is paged in hints ("results" unless set).
	Unit string
	// Incomplete says the list Page is given is only the part that could
	// be fetched (Fetch's complete was false): its length is a lower bound.
	Incomplete bool
	query      json.RawMessage
}

type cursorState struct {
	Query  json.RawMessage `json:"q"`
	Offset int             `json:"o"`
	Limit  int             `json:"l"`
}

// NewPager reads detail_level, offset and limit from args, caps exploring
// mode at maxResults, and, on a continuation (ctx.Cursor set), takes the
// page from the cursor: focused mode at the cursor's offset and limit.
// query is what identifies the list (the arguments other than the paging
// ones); it must encode the same on every call of the same query.
func NewPager(ctx *warden.Context, args json.RawMessage, query any, maxResults int) (*Pager, error) {
	g, err := warden.NewGuard(args)
	if err != nil {
		return nil, err
	}
	g.MaxResults = maxResults
	q, err := json.Marshal(query)
	if err != nil {
		return nil, warden.Failed("encode query: %v", err)
	}
	p := &Pager{Guard: g, Unit: "results", query: q}
	if ctx.Cursor == "" {
		return p, nil
	}
	var st cursorState
	if err := json.Unmarshal([]byte(ctx.Cursor), &st); err != nil || st.Offset < 0 || st.Limit < 1 {
		// The host verified the cursor came from this tool, so this is a
		// cursor of an older version of it.
		return nil, warden.InvalidArguments("cursor: not a cursor of this tool's version; call again without it")
	}
	if !bytes.Equal(st.Query, q) {
		return nil, warden.InvalidArguments("cursor: it continues a different query (%s); pass the same arguments as the call that returned it, or call without a cursor", st.Query)
	}
	g.Mode, g.Offset, g.Limit = warden.Focused, st.Offset, st.Limit
	return p, nil
}

// Page returns the part of items the pager lets through, the overflow
// when some were left out, and the cursor that continues with the next
// page ("" when there is none). exploreHint tells a model in exploring
// mode how to narrow the query.
func Page[T any](p *Pager, items []T, exploreHint string) ([]T, *warden.Overflow, string) {
	page, o := warden.Page(p.Guard, items, exploreHint)
	if p.Incomplete {
		return incompletePage(p, page, o, len(items), exploreHint)
	}
	if o == nil || p.Mode == warden.Exploring {
		if o != nil {
			o.Hint = exploreHint + `; or use detail_level "full" with offset/limit to page through all ` + fmt.Sprint(o.Total, " ", p.Unit)
		}
		return page, o, ""
	}
	if o.NextOffset == nil {
		o.Hint = "this is the last page"
		return page, o, ""
	}
	o.Hint = fmt.Sprintf("more %s: call again with offset %d (or with the result's cursor)", p.Unit, *o.NextOffset)
	state, err := json.Marshal(cursorState{Query: p.query, Offset: *o.NextOffset, Limit: p.Limit})
	if err != nil {
		// A RawMessage and two ints always encode.
		return page, o, ""
	}
	return page, o, string(state)
}

// incompletePage is Page for a list that was cut before it reached the
// tool: every page, the last one fetched included, says that more exist
// and how many at least, so that nothing reads as complete.
func incompletePage[T any](p *Pager, page []T, o *warden.Overflow, fetched int, exploreHint string) ([]T, *warden.Overflow, string) {
	if o == nil {
		o = &warden.Overflow{Shown: len(page), Total: fetched}
	}
	o.AtLeast = true
	more := fmt.Sprintf("there are more than the %d %s warden could fetch, so this list is incomplete; %s", fetched, p.Unit, exploreHint)
	if p.Mode == warden.Exploring || o.NextOffset == nil {
		o.Hint = more
		return page, o, ""
	}
	o.Hint = fmt.Sprintf("more %s: call again with offset %d (or with the result's cursor); %s", p.Unit, *o.NextOffset, more)
	state, err := json.Marshal(cursorState{Query: p.query, Offset: *o.NextOffset, Limit: p.Limit})
	if err != nil {
		return page, o, ""
	}
	return page, o, string(state)
}
