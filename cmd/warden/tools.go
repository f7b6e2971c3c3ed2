package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/catalog"
	"github.com/warden-run/warden/internal/install"
	"github.com/warden-run/warden/internal/runlimits"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

func newToolsCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "tools",
		Short: "List the loaded tools with what they request and what config grants them",
		Args:  cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.requireConfig(); err != nil {
				return err
			}
			a, _, err := g.start(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close(cmd.Context())
			stop := showLoads(a)
			errs := a.Catalog().LoadTools(cmd.Context())
			stop()
			for _, err := range errs {
				fmt.Fprintln(os.Stderr, "warden:", termsafe.Message(err.Error()))
			}
			printTools(cmd.OutOrStdout(), a)
			return nil
		},
	}
}

func printTools(w io.Writer, a *app.App) {
	cfg := a.Config()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tMODULE\tSHA256\tREQUESTED\tGRANTED\tNOT GRANTED")
	var elsewhere []error
	for _, t := range a.Catalog().Table().Tools() {
		m := t.Module()
		granted, err := cfg.Grants(t.Descriptor.Name, m.Name())
		if err != nil {
			elsewhere = append(elsewhere, err)
		}
		requested := t.Descriptor.Capabilities
		// The last column is what a reviewer must decide on: requested,
		// not granted (`warden grant` it, or leave the tool without it).
		// Every field but the hash comes from the module or its file name:
		// escaped, so that none can move the cursor or fake a column.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", termsafe.Line(t.Descriptor.Name), termsafe.Line(m.Name()), m.SHA256()[:12],
			summary(requested), summary(granted), summary(install.Missing(requested, granted)))
	}
	tw.Flush()
	printRefusals(w, a.Catalog().Refused(), elsewhere)
}

// printRefusals lists, under the table, the tools not served because
// several modules describe their name, and the grant entries that give a
// served tool nothing because they belong to another module. Names in them
// are validated tool and module names, safe to print.
func printRefusals(w io.Writer, refused []catalog.Refusal, elsewhere []error) {
	if len(refused) > 0 {
		fmt.Fprintf(w, "\nREFUSED (%d; not served):\n", len(refused))
		for _, r := range refused {
			fmt.Fprintf(w, "  %s (module %s): %s\n", r.Tool, r.Module, r.Reason)
		}
	}
	if len(elsewhere) > 0 {
		fmt.Fprintf(w, "\nGRANTS OF ANOTHER MODULE (%d; nothing granted):\n", len(elsewhere))
		for _, err := range elsewhere {
			fmt.Fprintf(w, "  %v\n", err)
		}
	}
}

// summary is c.Summary() escaped for a terminal, bounded like a description.
func summary(c tool.Capabilities) string {
	return termsafe.Bound(c.Summary(), termsafe.MaxText, false)
}

func newCallCmd(g *globalFlags) *cobra.Command {
	var session string
	cmd := &cobra.Command{
		Use:   "call TOOL [ARGUMENTS_JSON]",
		Short: "Call a tool once and print its result as JSON",
		Long: `Call a tool once and print its result as JSON on stdout. Progress and the tool's log
lines go to stderr. The exit status is 0 on success, 1 when the result is an error,
and 2 on a usage error (bad flags, unknown tool, arguments that are not JSON).`,
		Example: `  warden call echo '{"text":"hello"}'`,
		Args:    cobraArgs(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			arguments := "{}"
			if len(args) == 2 {
				arguments = args[1]
			}
			if !json.Valid([]byte(arguments)) {
				return usagef("arguments %q are not JSON (quote them: '{\"text\":\"hi\"}')", arguments)
			}
			if err := g.requireConfig(); err != nil {
				return err
			}
			a, logger, err := g.start(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close(cmd.Context())
			for _, err := range a.Catalog().LoadTools(cmd.Context()) {
				logger.Warn("tool not loaded", "error", err)
			}
			res, err := a.Call(cmd.Context(), mcpserver.Call{Pass: mcpserver.LocalPass(),
				Name: args[0], Arguments: json.RawMessage(arguments), Session: session,
				Observer: stderrObserver{logger},
			})
			if err != nil {
				return usagef("%v (see `warden tools`)", err)
			}
			if res.Captured != nil {
				logger.Info("tool output", "stdout", termsafe.Escape(res.Captured.Stdout), "stderr", termsafe.Escape(res.Captured.Stderr))
			}
			if err := writeJSON(cmd.OutOrStdout(), presentResult(res)); err != nil {
				return err
			}
			if res.IsError {
				return errToolFailed
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "session id, for tools with isolation: session")
	return cmd
}

// presentResult is the JSON the CLI prints: the MCP result shape, plus the
// details a model never sees but a person at a terminal may want.
func presentResult(r *tool.Result) any {
	return struct {
		Content           []tool.Content  `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
		IsError           bool            `json:"isError,omitempty"`
		Error             *tool.Error     `json:"error,omitempty"`
		NextCursor        string          `json:"nextCursor,omitempty"`
		Details           json.RawMessage `json:"details,omitempty"`
		Meta              map[string]any  `json:"_meta,omitempty"`
	}{r.Content, r.StructuredContent, r.IsError, r.Error, r.NextCursor, r.Details, r.Meta}
}

// writeJSON prints v as indented JSON that is safe on a terminal: the
// characters encoding/json leaves raw (C1 controls, bidi overrides,
// zero-width characters) become \u escapes, which decode to the same value.
func writeJSON(w io.Writer, v any) error {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(termsafe.JSON(out), '\n'))
	return err
}

// stderrObserver shows a call's progress and log lines on stderr, escaped:
// a guest's line must not drive the operator's terminal.
type stderrObserver struct{ log *slog.Logger }

func (o stderrObserver) Progress(p tool.Progress) {
	o.log.Info("progress", "progress", p.Progress, "total", p.Total, "message", termsafe.Line(p.Message))
}

func (o stderrObserver) Log(level slog.Level, msg string) {
	o.log.Log(context.Background(), level, "tool log", "message", termsafe.Escape(msg))
}

func newInspectCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "inspect FILE.wasm",
		Short: "Show a module's tools, imports, exports and requested capabilities",
		Long: `Show what a module is before you install it: its tools' descriptors, the host
functions it imports, its exports and the capabilities each tool requests. Nothing of
the module runs beyond _initialize and describe, inside the sandbox.`,
		Args: cobraArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, _, err := g.start(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close(cmd.Context())
			m, err := a.Runtime().LoadFile(cmd.Context(), args[0], runlimits.Module(a.Config(), catalog.ModuleName(args[0])))
			if err != nil {
				return err
			}
			defer m.Close(cmd.Context())
			return printInspect(cmd.OutOrStdout(), m)
		},
	}
}

func printInspect(w io.Writer, m *runtime.Module) error {
	type rejected struct {
		Name   string `json:"name"`
		Reason string `json:"reason"`
	}
	out := struct {
		Module   string            `json:"module"`
		SHA256   string            `json:"sha256"`
		Imports  []string          `json:"imports"`
		Exports  []string          `json:"exports"`
		Tools    []tool.Descriptor `json:"tools"`
		Rejected []rejected        `json:"rejected,omitempty"`
	}{Module: m.Name(), SHA256: m.SHA256(), Imports: m.Imports(), Exports: m.Exports()}
	for _, t := range m.Tools() {
		out.Tools = append(out.Tools, t.Descriptor)
	}
	for _, r := range m.Rejected() {
		out.Rejected = append(out.Rejected, rejected{r.Name, r.Reason.Error()})
	}
	return writeJSON(w, out)
}
