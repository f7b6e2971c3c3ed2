package console

import (
	"errors"
	"net/http"

	"github.com/warden-run/warden/internal/tasks"
)

// maxTasksShown bounds one page of the Tasks list.
const maxTasksShown = 100

type tasksView struct {
	Tasks []tasks.Task
	Next  string
}

// tasksPage lists the session's own tasks (a Store answers a task only to
// its owner: Options.TaskOwner of the person).
func (c *Console) tasksPage(w http.ResponseWriter, r *http.Request, s *session) {
	if c.opts.Tasks == nil {
		http.NotFound(w, r)
		return
	}
	list, next, err := c.opts.Tasks.List(r.Context(), c.opts.TaskOwner(s.who), r.URL.Query().Get("cursor"), maxTasksShown)
	if err != nil {
		c.renderPage(w, http.StatusServiceUnavailable, "tasks", s, tasksView{}, "The tasks could not be listed: "+err.Error(), "")
		return
	}
	c.render(w, http.StatusOK, "tasks", s, tasksView{Tasks: list, Next: next})
}

func (c *Console) cancelTask(w http.ResponseWriter, r *http.Request, s *session) {
	if c.opts.Tasks == nil {
		http.NotFound(w, r)
		return
	}
	owner := c.opts.TaskOwner(s.who)
	_, err := c.opts.Tasks.Cancel(r.Context(), owner, r.PathValue("id"))
	list, next, _ := c.opts.Tasks.List(r.Context(), owner, "", maxTasksShown)
	v := tasksView{Tasks: list, Next: next}
	switch {
	case errors.Is(err, tasks.ErrNotFound):
		c.renderPage(w, http.StatusNotFound, "tasks", s, v, "No such task of yours.", "")
	case errors.Is(err, tasks.ErrTerminal):
		c.renderPage(w, http.StatusConflict, "tasks", s, v, "The task has already ended.", "")
	case err != nil:
		c.renderPage(w, http.StatusServiceUnavailable, "tasks", s, v, "Not cancelled: "+err.Error(), "")
	default:
		c.renderPage(w, http.StatusOK, "tasks", s, v, "", "Cancellation requested: the task stops at its next check.")
	}
}
