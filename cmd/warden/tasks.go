package main

import (
	"log/slog"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/tasks"
)

// startTasks makes a serving app run MCP tasks on the project's task
// store. A store that cannot be opened turns tasks off, not the server:
// clients are then offered none.
func startTasks(a *app.App, cfg *config.Config, logger *slog.Logger) {
	store, err := tasks.OpenFile(tasks.DefaultDir(cfg.Project.Root), nil)
	if err != nil {
		logger.Warn("MCP tasks are off: the task store could not be opened", "error", err)
		return
	}
	a.StartTasks(store, app.TaskOptions{})
}
