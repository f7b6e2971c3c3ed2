package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// startTasks makes a serving app run MCP tasks on the project's task
// store. A store that cannot be opened turns tasks off, not the server:
// clients are then offered none.
func startTasks(a *app.App, cfg *config.Config, logger *slog.Logger) {
	store, err := tasks.Open(context.Background(), tasks.Options{
		Backend: cfg.TasksBackend(), Dir: tasks.DefaultDir(cfg.Project.Root),
		MaxConns: cfg.Memory.Postgres.MaxConns, QueryTimeout: cfg.Memory.Postgres.QueryTimeout,
		Logger: logger,
	})
	if err != nil {
		logger.Warn("MCP tasks are off: the task store could not be opened", "error", err)
		return
	}
	t := cfg.Tasks
	a.StartTasks(store, app.TaskOptions{
		MaxPerClient: t.MaxPerClient, MaxTotal: t.MaxTotal,
		MaxRecordsPerClient: t.MaxRecordsPerClient, MaxRecords: t.MaxRecords,
		MaxResult: cfg.TaskResultBytes(), TTL: t.TTL, MaxTTL: t.MaxTTL,
		PollInterval: t.PollInterval, Lease: t.Lease,
	})
}

// cliPeer is the peer of the tasks `warden call --task` starts: the
// operator's own, which no MCP client is (tasks.OwnerOf).
const cliPeer = "cli"

// taskEnded is the error of a task that ended without a result of its
// call: failed (the tool is gone, its server stopped) or cancelled before
// the call returned.
type taskEnded struct{ task tasks.Task }

func (e *taskEnded) Error() string {
	return fmt.Sprintf("task %s %s: %s", e.task.ID, e.task.Status, e.task.StatusMessage)
}

// callAsTask runs c as an MCP task on the config's task store, its
// progress shown on stderr as it comes (whatever the log level: following
// it is what --task is for); ctx ending (Ctrl-C) cancels the task and
// waits for it to end cancelled.
func callAsTask(ctx context.Context, a *app.App, c mcpserver.Call, stderr io.Writer, logger *slog.Logger) (*tool.Result, error) {
	startTasks(a, a.Config(), logger)
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(stderr, termsafe.Line(fmt.Sprintf(format, args...)))
	}
	c.Observer = mcpserver.StatusObserver(c.Observer, func(status string) { say("task: %s", status) })
	res, final, err := a.CallAsTask(ctx, tasks.OwnerOf(principal.Local, cliPeer), c, func(t tasks.Task) {
		say("task %s started; Ctrl-C cancels it", t.ID)
	})
	if err != nil {
		return nil, err
	}
	say("task %s %s: %s", final.ID, final.Status, final.StatusMessage)
	if res == nil {
		return nil, &taskEnded{task: final}
	}
	return res, nil
}
