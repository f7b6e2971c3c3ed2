package console

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/tasks"
)

// ownerStore keeps tasks by owner and answers each owner only its own, as
// the tasks.Store contract says (no store implementation is on this
// branch; the contract is what the page relies on).
type ownerStore struct {
	tasks.Store // methods the page does not call panic
	mu          sync.Mutex
	all         []tasks.Task
}

func (s *ownerStore) List(_ context.Context, owner, _ string, limit int) ([]tasks.Task, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []tasks.Task
	for _, t := range s.all {
		if t.Owner == owner && len(out) < limit {
			out = append(out, t)
		}
	}
	return out, "", nil
}

func (s *ownerStore) Cancel(_ context.Context, owner, id string) (tasks.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.all, func(t tasks.Task) bool { return t.ID == id && t.Owner == owner })
	if i < 0 {
		return tasks.Task{}, tasks.ErrNotFound
	}
	if s.all[i].Status.Terminal() {
		return s.all[i], tasks.ErrTerminal
	}
	s.all[i].CancelRequested = true
	return s.all[i], nil
}

// cancelRequested reports whether task i's cancellation was requested.
func (s *ownerStore) cancelRequested(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all[i].CancelRequested
}

func TestTasksPageShowsAndCancelsOwnTasks(t *testing.T) {
	now := time.Now()
	store := &ownerStore{all: []tasks.Task{
		{ID: "t-working", Owner: "owner:local", Tool: "build", Status: tasks.Working, StatusMessage: "compiling 3/9", Created: now, Updated: now},
		{ID: "t-done", Owner: "owner:local", Tool: "build", Status: tasks.Completed, Created: now, Updated: now},
		{ID: "t-other", Owner: "someone-else", Tool: "secret-build", Status: tasks.Working, Created: now, Updated: now},
	}}
	w := newWorld(t, Options{Prefix: "/", Tasks: store, TaskOwner: func(p principal.Principal) string { return "owner:" + p.Subject }})
	cl, token := w.login(principal.Local)
	page := w.get(cl, "/tasks")
	if !strings.Contains(page, `data-task="t-working"`) || !strings.Contains(page, "compiling 3/9") || !strings.Contains(page, `data-task="t-done"`) {
		t.Errorf("own tasks not listed:\n%s", page)
	}
	if strings.Contains(page, "t-other") || strings.Contains(page, "secret-build") {
		t.Errorf("another owner's task listed:\n%s", page)
	}
	if strings.Count(page, `/cancel"`) != 1 {
		t.Errorf("want a cancel button for the working task only:\n%s", page)
	}
	for _, tc := range []struct {
		id     string
		status int
		want   string
	}{
		{"t-other", http.StatusNotFound, "No such task of yours."},
		{"t-done", http.StatusConflict, "The task has already ended."},
		{"t-working", http.StatusOK, "Cancellation requested"},
	} {
		resp, body := w.post(cl, "/tasks/"+tc.id+"/cancel", url.Values{"csrf": {token}}, nil)
		if resp.StatusCode != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("cancel %s: %s, want %d %q", tc.id, resp.Status, tc.status, tc.want)
		}
	}
	if !store.cancelRequested(0) || store.cancelRequested(2) {
		t.Errorf("cancel flags %v %v", store.cancelRequested(0), store.cancelRequested(2))
	}
	// Without a store there is no Tasks page.
	w2 := newWorld(t, Options{Prefix: "/"})
	cl2, _ := w2.login(principal.Local)
	if page := w2.get(cl2, "/approvals"); strings.Contains(page, `href="/tasks"`) {
		t.Error("the nav offers Tasks without a store")
	}
	resp, _ := cl2.Get(w2.srv.URL + "/tasks")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/tasks without a store: %s", resp.Status)
	}
}
