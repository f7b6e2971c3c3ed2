package console

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/warden-run/warden/internal/approvals"
	"github.com/warden-run/warden/internal/termsafe"
)

// approvalsView is the Approvals page's data.
type approvalsView struct {
	Pending []approvals.Request
	// Mine says, per request id, whether this session may decide it.
	Mine map[string]bool
}

func (c *Console) approvalsView(r *http.Request, s *session) (approvalsView, error) {
	pending, err := c.opts.Broker.Pending(r.Context())
	if err != nil {
		return approvalsView{}, fmt.Errorf("pending approvals: %w", err)
	}
	v := approvalsView{Pending: pending, Mine: map[string]bool{}}
	by, groups := approvals.Decider(s.who)
	for _, q := range pending {
		v.Mine[q.ID] = approvals.MayDecide(q, by, groups)
	}
	return v, nil
}

func (c *Console) approvalsPage(w http.ResponseWriter, r *http.Request, s *session) {
	v, err := c.approvalsView(r, s)
	if err != nil {
		c.renderPage(w, http.StatusServiceUnavailable, "approvals", s, v, err.Error(), "")
		return
	}
	c.render(w, http.StatusOK, "approvals", s, v)
}

// approvalsList is the list alone, which the page fetches when the
// pending set changes.
func (c *Console) approvalsList(w http.ResponseWriter, r *http.Request, s *session) {
	v, err := c.approvalsView(r, s)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	c.renderBlock(w, http.StatusOK, "approvals", "list", s, v, "", "")
}

// approvalsEvents tells the page, by server-sent events, when the pending
// set changed (Broker.Subscribe); the page then fetches the list.
func (c *Console) approvalsEvents(w http.ResponseWriter, r *http.Request, _ *session) {
	changes, cancel := c.opts.Broker.Subscribe()
	defer cancel()
	c.stream(w, r, changes)
}

// maxStreamsPerSession bounds the live streams (open pages) per session
// the console allows at once, in total: each holds a goroutine and a
// connection.
const maxStreamsPerSession = 8

// stream sends one "change" event at once and one for each value of
// changes, until the client goes or the console closes.
func (c *Console) stream(w http.ResponseWriter, r *http.Request, changes <-chan struct{}) {
	if n := c.streams.Add(1); n > int64(maxStreamsPerSession*c.opts.MaxSessions) {
		c.streams.Add(-1)
		http.Error(w, "too many live pages are open; close some", http.StatusServiceUnavailable)
		return
	}
	defer c.streams.Add(-1)
	rc := http.NewResponseController(w)
	// A stream lives longer than serve's write timeout allows a response.
	_ = rc.SetWriteDeadline(time.Time{})
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	send := func() bool {
		if _, err := fmt.Fprint(w, "event: change\ndata: {}\n\n"); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send() {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.done:
			return
		case <-changes:
			if !send() {
				return
			}
		}
	}
}

// decide answers one question with the session's principal and groups.
func (c *Console) decide(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	choice := r.PostFormValue("decision")
	var q *approvals.Request
	if pending, err := c.opts.Broker.Pending(r.Context()); err == nil {
		for i := range pending {
			if pending[i].ID == id {
				q = &pending[i]
			}
		}
	}
	d := approvals.Decision{By: keyOf(s.who), At: c.opts.now()}
	switch choice {
	case "approve":
		d.Approved = true
	case "always":
		// "Always" writes the grant: only a permission has one.
		if q != nil && q.Kind != approvals.Permission {
			c.afterDecide(w, r, s, http.StatusBadRequest, "“Always” is for a permission; a gate's confirmation is approved call by call.", "")
			return
		}
		d.Approved, d.Persist = true, true
	case "deny":
	default:
		c.afterDecide(w, r, s, http.StatusBadRequest, "decision must be approve, always or deny", "")
		return
	}
	_, groups := approvals.Decider(s.who)
	err := c.opts.Broker.Decide(r.Context(), id, d, groups)
	switch {
	case errors.Is(err, approvals.ErrNotYours):
		c.afterDecide(w, r, s, http.StatusForbidden,
			fmt.Sprintf("You (%s) are not among this request's approvers: it names %s, and your groups are %s.",
				whoOf(s.who), listOrNone(q), listOf(s.who.Groups)), "")
	case errors.Is(err, approvals.ErrNotFound):
		c.afterDecide(w, r, s, http.StatusConflict, "This question is no longer waiting: someone answered it, or the call's wait ended.", "")
	case err != nil:
		c.log.Error("console: decision not recorded", "id", termsafe.Line(id), "error", err)
		c.afterDecide(w, r, s, http.StatusServiceUnavailable, "The decision could not be recorded: "+err.Error(), "")
	default:
		what := "Denied"
		if d.Approved {
			what = "Approved"
		}
		if q != nil {
			what += ": " + q.Tool
		}
		c.afterDecide(w, r, s, http.StatusOK, "", what+".")
	}
}

func (c *Console) afterDecide(w http.ResponseWriter, r *http.Request, s *session, status int, errMsg, notice string) {
	v, _ := c.approvalsView(r, s)
	c.renderPage(w, status, "approvals", s, v, errMsg, notice)
}

func listOrNone(q *approvals.Request) string {
	if q == nil {
		return "(unknown)"
	}
	return listOf(q.Approvers)
}

func listOf(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += termsafe.Line(v)
	}
	return out
}
