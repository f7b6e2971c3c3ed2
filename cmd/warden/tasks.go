package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/osfile"
	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/internal/termsafe"
)

func newTasksCmd(g *globalFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "List, show and cancel the tasks (long-running tool calls) of a config's backend",
		Long: `List, show and cancel tasks: tool calls a client started as MCP tasks, which run on
past the request that started them. warden tasks reads the task store the config names
(tasks.backend: the project's .warden/tasks, or the PostgreSQL database its replicas
share), as the person who runs the server: it shows every client's tasks, each with its
owner (an OAuth issuer and subject, "token" for the static token's holder, or a local
peer). Anyone who can read the config and its backend can read the records directly.

warden tasks cancel asks for a task's end: the server running it stops the tool at its
next lease renewal (every third of tasks.lease) and the task ends cancelled.`,
		Args: cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withTasks(cmd.Context(), func(s tasks.OperatorStore, where string) error {
				return listTasks(cmd.Context(), cmd.OutOrStdout(), s, where, asJSON)
			})
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List every task, oldest first, with its owner (a result: warden tasks show ID)",
		Args:  cobraArgs(cobra.NoArgs),
		RunE:  cmd.RunE,
	}
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one task: its status, times, owner, lease and result",
		Args:  cobraArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := taskID(args[0])
			if err != nil {
				return err
			}
			return g.withTasks(cmd.Context(), func(s tasks.OperatorStore, where string) error {
				t, err := getTask(cmd.Context(), s, id, where)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), t)
				}
				printTask(cmd.OutOrStdout(), &t, time.Now())
				return nil
			})
		},
	}
	cancel := &cobra.Command{
		Use:   "cancel ID",
		Short: "Ask the server running a task to stop it; it ends cancelled",
		Args:  cobraArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := taskID(args[0])
			if err != nil {
				return err
			}
			return g.withTasks(cmd.Context(), func(s tasks.OperatorStore, where string) error {
				if s == nil {
					return fmt.Errorf("no task %s in %s", id, where)
				}
				t, err := s.CancelAny(cmd.Context(), id)
				switch {
				case errors.Is(err, tasks.ErrNotFound):
					return fmt.Errorf("no task %s in %s", id, where)
				case errors.Is(err, tasks.ErrTerminal):
					return fmt.Errorf("task %s has already ended (%s)", id, t.Status)
				case err != nil:
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "cancel requested for task %s (tool %s, owner %s): the server running it stops it at its next lease renewal, and it ends cancelled\n",
					id, termsafe.Line(t.Tool), termsafe.Line(t.Owner))
				return nil
			})
		},
	}
	for _, c := range []*cobra.Command{cmd, list, show} {
		c.Flags().BoolVar(&asJSON, "json", false, "print the records as JSON")
	}
	for _, c := range []*cobra.Command{list, show, cancel} {
		c.Flags().AddFlagSet(g.flags())
		cmd.AddCommand(c)
	}
	return cmd
}

// taskID is arg as a task id, or a usage error.
func taskID(arg string) (string, error) {
	id, err := tasks.ParseID(arg)
	if err != nil {
		return "", usagef("%s is not a task id (32 lowercase hex digits, as warden tasks list shows them)", termsafe.Line(fmt.Sprintf("%q", arg)))
	}
	return id, nil
}

// withTasks opens the task store of the config and runs f on it; where
// names the store for messages, without a database URL's password. A
// file store whose directory does not exist holds no tasks: f gets a nil
// store rather than a directory created only to be read.
func (g *globalFlags) withTasks(ctx context.Context, f func(s tasks.OperatorStore, where string) error) error {
	if err := g.requireConfig(); err != nil {
		return err
	}
	cfg, err := config.Load(g.configPath)
	if err != nil {
		return usageError{textError{err}}
	}
	backend := cfg.TasksBackend()
	dir := tasks.DefaultDir(cfg.Project.Root)
	where := "the PostgreSQL database of tasks.backend"
	if backend == "file" || backend == "" {
		where = termsafe.Line(dir)
		info, err := os.Stat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return f(nil, where)
		}
		if err != nil {
			return err
		}
		// Opened as another user (sudo), the store would make its lock file
		// and rewrite records as that user, private to it: the server could
		// no longer read them or take the lock.
		if owner, user, mine, err := osfile.Owner(dir, info); err == nil && !mine {
			return fmt.Errorf("the task store %s belongs to %s, not to this user (%s): run warden tasks as %s, the user the server runs as; "+
				"a lock file or record written as this user would be unreadable to the server", where, owner, user, owner)
		}
	}
	s, err := tasks.OpenOperator(ctx, tasks.Options{Backend: backend, Dir: dir,
		MaxConns: cfg.Memory.Postgres.MaxConns, QueryTimeout: cfg.Memory.Postgres.QueryTimeout})
	if err != nil {
		return err
	}
	defer s.Close()
	return f(s, where)
}

// getTask is s's task id, or an error naming where it was looked for.
func getTask(ctx context.Context, s tasks.OperatorStore, id, where string) (tasks.Task, error) {
	if s == nil {
		return tasks.Task{}, fmt.Errorf("no task %s in %s", id, where)
	}
	t, err := s.GetAny(ctx, id)
	if errors.Is(err, tasks.ErrNotFound) {
		return t, fmt.Errorf("no task %s in %s", id, where)
	}
	return t, err
}

// listTasks prints every task of s, a line each (or a JSON array), a page
// at a time: what it holds is one page, however many tasks there are (a
// listed task carries no result: warden tasks show prints it).
func listTasks(ctx context.Context, w io.Writer, s tasks.OperatorStore, where string, asJSON bool) error {
	now := time.Now()
	listed := 0
	for cursor := ""; s != nil; {
		page, next, err := s.ListAll(ctx, cursor, tasks.MaxListLimit)
		if err != nil {
			return err
		}
		if asJSON {
			if err := printJSONElements(w, page, listed == 0); err != nil {
				return err
			}
		} else {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			if listed == 0 && len(page) > 0 {
				fmt.Fprintln(tw, "ID\tSTATUS\tTOOL\tOWNER\tCREATED\tMESSAGE")
			}
			for i := range page {
				t := &page[i]
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", termsafe.Line(t.ID), status(t, now), termsafe.Bound(t.Tool, 64, false),
					termsafe.Bound(t.Owner, 64, false), t.Created.UTC().Format(time.RFC3339), termsafe.Bound(t.StatusMessage, 80, false))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		listed += len(page)
		if next == "" {
			break
		}
		cursor = next
	}
	switch {
	case asJSON && listed == 0:
		_, err := fmt.Fprintln(w, "[]")
		return err
	case asJSON:
		_, err := fmt.Fprintln(w, "\n]")
		return err
	case listed == 0:
		fmt.Fprintf(w, "no tasks in %s\n", where)
	}
	return nil
}

// printJSONElements prints page as the next elements of a JSON array that
// listTasks closes, opening it when first.
func printJSONElements(w io.Writer, page []tasks.Task, first bool) error {
	for i := range page {
		data, err := json.MarshalIndent(&page[i], "  ", "  ")
		if err != nil {
			return err
		}
		sep := ",\n  "
		if first && i == 0 {
			sep = "[\n  "
		}
		if _, err := fmt.Fprint(w, sep+string(termsafe.JSON(data))); err != nil {
			return err
		}
	}
	return nil
}

// status is t's status as a person reads it: with a pending cancel
// request, or a lapsed lease (the task ends failed at the next sweep of a
// server on its backend).
func status(t *tasks.Task, now time.Time) string {
	s := string(t.Status)
	if t.Status.Terminal() {
		return termsafe.Line(s)
	}
	if t.CancelRequested {
		s += ", cancel requested"
	}
	if !t.LeaseUntil.IsZero() && t.LeaseUntil.Before(now) {
		s += ", lease lapsed"
	}
	return termsafe.Line(s)
}

// printTask prints one task for a person.
func printTask(w io.Writer, t *tasks.Task, now time.Time) {
	line := func(key, value string) { fmt.Fprintf(w, "%-9s %s\n", key+":", value) }
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	line("id", termsafe.Line(t.ID))
	line("tool", termsafe.Line(t.Tool))
	line("owner", termsafe.Line(t.Owner))
	line("status", status(t, now))
	if t.StatusMessage != "" {
		line("message", termsafe.Line(t.StatusMessage))
	}
	line("created", at(t.Created))
	line("updated", at(t.Updated))
	line("expires", at(t.Expires()))
	if t.Replica != "" {
		lease := "no lease"
		if !t.LeaseUntil.IsZero() {
			lease = "lease until " + at(t.LeaseUntil)
		}
		line("replica", termsafe.Line(t.Replica)+" ("+lease+")")
	}
	if t.Result == nil {
		return
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, t.Result, "", "  "); err != nil {
		line("result", fmt.Sprintf("(%d bytes, not JSON)", len(t.Result)))
		return
	}
	fmt.Fprintf(w, "result:\n%s\n", termsafe.JSON(indented.Bytes()))
}

// printJSON prints v as indented JSON, safe on a terminal.
func printJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(termsafe.JSON(data)))
	return err
}
