package console

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/warden-run/warden/internal/approvals"
	"github.com/warden-run/warden/internal/termsafe"
)

// approvalsView is the Approvals page's data.
type approvalsView struct {
	Pending []approvals.Request
	// Mine says, per request id, whether this session may decide it.
	Mine map[string]bool
	// Unavailable, when not empty, says why some questions may be missing
	// (a backend failed): the page shows it above those it could list.
	Unavailable string
}

// approvalsView lists what the broker returned even when it also failed:
// a Fallback whose shared backend is down still returns the questions
// waiting on this replica, which only this console can answer.
func (c *Console) approvalsView(r *http.Request, s *session) approvalsView {
	pending, err := c.opts.Broker.Pending(r.Context())
	v := approvalsView{Pending: pending, Mine: map[string]bool{}}
	if err != nil {
		c.log.Warn("console: pending approvals not all listed", "error", err)
		v.Unavailable = "Some waiting questions cannot be listed: " + err.Error()
	}
	by, groups := approvals.Decider(s.who)
	for _, q := range pending {
		v.Mine[q.ID] = approvals.MayDecide(q, by, groups)
	}
	return v
}

func (c *Console) approvalsPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.render(w, http.StatusOK, "approvals", s, c.approvalsView(r, s))
}

// approvalsList is the list alone, which the page fetches when the
// pending set changes.
func (c *Console) approvalsList(w http.ResponseWriter, r *http.Request, s *session) {
	c.renderBlock(w, http.StatusOK, "approvals", "list", s, c.approvalsView(r, s), "", "")
}

// approvalsEvents tells the page, by server-sent events, when the pending
// set changed (Broker.Subscribe); the page then fetches the list.
func (c *Console) approvalsEvents(w http.ResponseWriter, r *http.Request, s *session) {
	changes, cancel := c.opts.Broker.Subscribe()
	defer cancel()
	c.stream(w, r, s, changes)
}

// maxStreamsPerSession bounds the live streams (open pages) one session
// holds at once: each is a goroutine and a connection. The sessions'
// bound makes it a bound of the console's.
const maxStreamsPerSession = 8

// DefaultStreamCheck is how often a live stream checks that its session
// still lives when no event comes: a stream ends with its session
// (logout and eviction end it at once; expiry by this check).
const DefaultStreamCheck = 30 * time.Second

// streamCounts counts the live streams of each session.
type streamCounts struct {
	mu sync.Mutex
	n  map[[32]byte]int
}

// acquire takes one of session h's stream slots; false when it has none.
func (sc *streamCounts) acquire(h [32]byte) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.n == nil {
		sc.n = map[[32]byte]int{}
	}
	if sc.n[h] >= maxStreamsPerSession {
		return false
	}
	sc.n[h]++
	return true
}

func (sc *streamCounts) release(h [32]byte) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.n[h]--; sc.n[h] <= 0 {
		delete(sc.n, h)
	}
}

// stream sends one "change" event at once and one for each value of
// changes, until the client goes, the console closes, or session s ends
// (logged out, evicted or expired): a stream never outlives the session
// that opened it.
func (c *Console) stream(w http.ResponseWriter, r *http.Request, s *session, changes <-chan struct{}) {
	h := hashOf(s.id)
	if !c.streams.acquire(h) {
		http.Error(w, "too many live pages are open in this session; close some", http.StatusServiceUnavailable)
		return
	}
	defer c.streams.release(h)
	alive := func() bool { _, ok := c.sessions.get(s.id); return ok }
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
	check := time.NewTicker(c.streamCheck)
	defer check.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.done:
			return
		case <-s.gone:
			return
		case <-check.C:
			if !alive() {
				return
			}
		case <-changes:
			if !alive() || !send() {
				return
			}
		}
	}
}

// decide answers one question with the session's principal and groups.
func (c *Console) decide(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	choice := r.PostFormValue("decision")
	// The question is looked for among those Pending returned, even with
	// an error beside them (see approvalsView).
	var q *approvals.Request
	pending, _ := c.opts.Broker.Pending(r.Context())
	for i := range pending {
		if pending[i].ID == id {
			q = &pending[i]
		}
	}
	d := approvals.Decision{By: keyOf(s.who), At: c.opts.now()}
	switch choice {
	case "approve":
		d.Approved = true
	case "always":
		// "Always" writes the grant: only a permission has one, and only a
		// console admin changes grants (as on the Tools page). A question
		// the console cannot see (Pending failed, or the id is not
		// waiting) may be a gate: refused, never assumed a permission.
		if q == nil {
			c.afterDecide(w, r, s, http.StatusConflict, "This question is not among the waiting ones the console can see, so “Always” cannot be checked against it; reload and decide again.", "")
			return
		}
		if q.Kind != approvals.Permission {
			c.afterDecide(w, r, s, http.StatusBadRequest, "“Always” is for a permission; a gate's confirmation is approved call by call.", "")
			return
		}
		if q.Grant == "" {
			// The question offers no grant: config would refuse it (as the
			// question says), so an approval applies to this call only.
			c.afterDecide(w, r, s, http.StatusBadRequest, "“Always” is not offered for this permission: config would not take its grant (the question says why); approve this call once instead.", "")
			return
		}
		if !s.admin {
			c.log.Warn("console: refused “always” by a person who is not a console admin", "who", termsafe.Line(whoOf(s.who)))
			c.afterDecide(w, r, s, http.StatusForbidden, "“Always” writes a grant, which is for the console's admins (server.console_login.admin_subjects, admin_groups); approve this call once instead.", "")
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
	c.renderPage(w, status, "approvals", s, c.approvalsView(r, s), errMsg, notice)
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
