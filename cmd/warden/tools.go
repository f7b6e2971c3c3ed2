package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/catalog"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/install"
	"github.com/warden-run/warden/internal/runlimits"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

func newToolsCmd(g *globalFlags) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the loaded tools with what they request and what config grants them",
		Long: `List the loaded tools with what they request and what config grants them. A module
that failed to load is a FAILED row with the reason, and the exit status is then 1.
With -o json the same list is printed as JSON; docs/config.md ("Output for
scripts") describes its fields.`,
		Args: cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if err := g.requireConfig(); err != nil {
				return err
			}
			a, _, err := g.start(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close(cmd.Context())
			// Listing runs no call: compiled code would never be used.
			oneShot(a)
			stop := showLoads(a)
			// The errors LoadTools returns are the list's FAILED rows and
			// REFUSED lines: shown there, not twice.
			a.Catalog().LoadTools(cmd.Context())
			stop()
			list := listTools(cmd.Context(), a)
			if output == outputJSON {
				err = writeJSON(cmd.OutOrStdout(), list)
			} else {
				err = printTools(cmd.OutOrStdout(), list)
			}
			if err != nil {
				return err
			}
			if n := len(list.Failed); n > 0 {
				return fmt.Errorf("%d %s failed to load (%s)", n, plural(n, "module", "modules"), strings.Join(failedModules(list.Failed), ", "))
			}
			return nil
		},
	}
	addOutputFlag(cmd, &output, outputTable)
	return cmd
}

// oneShot readies a for a command whose process ends after a few calls
// (`warden tools`, `warden call`): its runtime starts no background
// compile (Runtime.ForOneShot), and the collector runs less often.
func oneShot(a *app.App) {
	a.Runtime().ForOneShot()
	relaxCollector()
}

// oneShotGCPercent is the collector's GOGC in a one-shot command. Its heap
// is mostly what a load keeps to the end (a module's interpreted code and
// instrumented bytes, its load-time instance): at the default of 100, each
// cycle of a cold load's growing heap marks what is kept once more: 400
// saves 7–11 % of a cold `warden tools`' CPU for up to 13 % more peak RSS
// (docs/performance.md, "One-shot start-up cost").
const oneShotGCPercent = 400

// relaxCollector sets oneShotGCPercent, unless GOGC sets the collector's
// pace (a GOMEMLIMIT still bounds the heap either way).
func relaxCollector() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	debug.SetGCPercent(oneShotGCPercent)
}

// The values of -o.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// addOutputFlag adds -o (table or json) to cmd, defaulting to def.
func addOutputFlag(cmd *cobra.Command, output *string, def string) {
	cmd.Flags().StringVarP(output, "output", "o", def, "output format: table or json")
}

func checkOutput(output string) error {
	if output != outputTable && output != outputJSON {
		return usagef("-o %q: want table or json", output)
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// toolList is what `warden tools` shows, and its JSON with -o json: a
// stable interface for scripts (docs/config.md, "Output for scripts"), so fields are only added.
// Every list is present, empty rather than null.
type toolList struct {
	Tools []toolRow `json:"tools"`
	// Failed are the modules whose latest load failed, by module name.
	Failed []failedModule `json:"failed"`
	// Rejected are the tools a loaded module describes that failed
	// validation, so are not served (the module's other tools are).
	Rejected []rejectedTool `json:"rejected"`
	// Refused are the tools not served because several modules describe
	// their name.
	Refused []catalog.Refusal `json:"refused"`
	// GrantsElsewhere are grant entries that give a served tool nothing
	// because they belong to another module.
	GrantsElsewhere []string `json:"grantsElsewhere"`
	// Unusable are grant values no call can use (a path outside the
	// project roots or under the deny-list), each with the reason a call
	// would be denied; they are not in their tool's granted (app.Grants).
	Unusable []string `json:"unusable"`
	// ServersMissing are the tools granted a language whose language
	// server is not installed: their calls in that language fail until it
	// is, and Error says how to install it.
	ServersMissing []serverMissing `json:"serversMissing"`
}

// serverMissing is one tool's granted language without a language server.
type serverMissing struct {
	Tool     string `json:"tool"`
	Language string `json:"language"`
	Error    string `json:"error"`
}

// toolRow is one served tool: the capabilities in the descriptor's own
// JSON shape (tool.Capabilities), as inspect shows them.
type toolRow struct {
	Name       string            `json:"name"`
	Module     string            `json:"module"`
	SHA256     string            `json:"sha256"`
	Requested  tool.Capabilities `json:"requested"`
	Granted    tool.Capabilities `json:"granted"`
	NotGranted tool.Capabilities `json:"notGranted"`
	// TaskSupport is whether the tool may (optional), must (required) or
	// must not (forbidden) run as an MCP task, as served: tools.tasks
	// over its descriptor's execution.taskSupport. TaskSetBy names the
	// tools.tasks entry when one decides, "" when the descriptor does.
	TaskSupport string `json:"taskSupport"`
	TaskSetBy   string `json:"taskSetBy,omitempty"`
	// Source is the module's install record (tools.sources.<module>);
	// absent for a module copied in or installed from a local file.
	Source *toolSource `json:"source,omitempty"`
}

// toolSource is a module's install record: where it was fetched from, the
// digest, and who signed it as warden verified it then
// (config.Source.Signer; config.SignerNotRecorded for a record older than
// signers).
type toolSource struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	Signer string `json:"signer"`
}

type failedModule struct {
	Module string `json:"module"`
	Error  string `json:"error"`
}

func failedModules(f []failedModule) []string {
	names := make([]string, len(f))
	for i, m := range f {
		names[i] = termsafe.Line(m.Module)
	}
	return names
}

// listTools gathers what `warden tools` shows, from the catalog and config,
// and asks the language servers of the granted languages whether they are
// installed.
func listTools(ctx context.Context, a *app.App) toolList {
	cfg := a.Config()
	list := toolList{Tools: []toolRow{}, Failed: []failedModule{}, Rejected: []rejectedTool{}, Refused: a.Catalog().Refused(), GrantsElsewhere: []string{}, Unusable: []string{}, ServersMissing: []serverMissing{}}
	installed := map[string]error{} // by language, asked once each
	if list.Refused == nil {
		list.Refused = []catalog.Refusal{}
	}
	// A grant no call can use is not shown as granted (app.Grants).
	judge, judgeErr := app.NewGrants(cfg)
	for _, t := range a.Catalog().Table().Tools() {
		m := t.Module()
		granted, err := cfg.Grants(t.Descriptor.Name, m.Name())
		if err != nil {
			list.GrantsElsewhere = append(list.GrantsElsewhere, err.Error())
		}
		if judgeErr == nil {
			status := judge.Status(t.Descriptor.Name, granted)
			granted = status.Usable
			for _, p := range status.Unusable {
				list.Unusable = append(list.Unusable, fmt.Sprintf("%s %s=%s: %s", t.Descriptor.Name, p.Key, p.Value, p.Error()))
			}
		}
		// The last column is what a reviewer must decide on: requested,
		// not granted (`warden grant` it, or leave the tool without it).
		notGranted := install.Missing(t.Descriptor.Capabilities, granted)
		for _, lang := range granted.LSP {
			err, asked := installed[lang]
			if !asked {
				err = a.LanguageServers().Installed(ctx, lang)
				installed[lang] = err
			}
			if err != nil {
				msg := err.Error()
				var te *tool.Error
				if errors.As(err, &te) {
					msg = te.Message // without the kind: every one is unavailable
				}
				list.ServersMissing = append(list.ServersMissing, serverMissing{Tool: t.Descriptor.Name, Language: lang, Error: msg})
			}
		}
		row := toolRow{Name: t.Descriptor.Name, Module: m.Name(), SHA256: m.SHA256(),
			Requested: t.Descriptor.Capabilities, Granted: granted, NotGranted: notGranted}
		if src, ok := cfg.Tools.Sources[configkey.Fold(m.Name())]; ok {
			row.Source = &toolSource{Ref: src.Ref, Digest: src.Digest, Signer: src.SignerShown()}
		}
		tp := a.Policy().Tool(t.Descriptor.Name)
		row.TaskSupport = tp.TaskSupport(&t.Descriptor)
		if tp.Task != "" {
			row.TaskSetBy = "tools.tasks." + tp.TaskKey
		}
		list.Tools = append(list.Tools, row)
	}
	for _, m := range a.Catalog().Table().Modules() {
		for _, r := range m.Rejected() {
			list.Rejected = append(list.Rejected, rejectedTool{Name: r.Name, Module: m.Name(), Reason: r.Reason.Error()})
		}
	}
	for _, f := range a.Catalog().LoadErrors() {
		list.Failed = append(list.Failed, failedModule{Module: f.Module, Error: f.Err.Error()})
	}
	return list
}

// printTools prints list as a table, then the refusals under it.
func printTools(w io.Writer, list toolList) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tMODULE\tSHA256\tREQUESTED\tGRANTED\tNOT GRANTED")
	for _, t := range list.Tools {
		// Every field but the hash comes from the module or its file name:
		// escaped, so that none can move the cursor or fake a column.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", termsafe.Line(t.Name), termsafe.Line(t.Module), t.SHA256[:12],
			summary(t.Requested), summary(t.Granted), summary(t.NotGranted))
	}
	// A module that failed to load is a row too: its tools are missing
	// from the table, and the reason is what to act on. The reason is the
	// line's last cell, which sets no column's width.
	for _, f := range list.Failed {
		fmt.Fprintf(tw, "-\t%s\t-\tFAILED: %s\n", termsafe.Line(f.Module), oneLine(f.Error))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(list.Rejected) > 0 {
		fmt.Fprintf(w, "\nREJECTED (%d; not served, the module's other tools are):\n", len(list.Rejected))
		for _, r := range list.Rejected {
			fmt.Fprintf(w, "  %s (module %s): %s\n", termsafe.Line(r.Name), termsafe.Line(r.Module), oneLine(r.Reason))
		}
	}
	printRefusals(w, list.Refused, list.GrantsElsewhere)
	printSources(w, list.Tools)
	printTasks(w, list.Tools)
	if len(list.Unusable) > 0 {
		fmt.Fprintf(w, "\nGRANTS NO CALL CAN USE (%d; not granted):\n", len(list.Unusable))
		for _, u := range list.Unusable {
			fmt.Fprintf(w, "  %s\n", termsafe.Message(u))
		}
	}
	if len(list.ServersMissing) > 0 {
		fmt.Fprintf(w, "\nLANGUAGE SERVERS NOT INSTALLED (%d; the tool's calls in that language fail until installed):\n", len(list.ServersMissing))
		for _, m := range list.ServersMissing {
			fmt.Fprintf(w, "  %s lsp=%s: %s\n", termsafe.Line(m.Tool), termsafe.Line(m.Language), oneLine(m.Error))
		}
	}
	return nil
}

// printSources lists, once per module, where the modules fetched from a
// registry or a URL came from and who signed them as verified at install
// (their install record); modules copied in print nothing.
func printSources(w io.Writer, tools []toolRow) {
	var lines []string
	seen := map[string]bool{}
	for _, t := range tools {
		if t.Source == nil || seen[t.Module] {
			continue
		}
		seen[t.Module] = true
		lines = append(lines, fmt.Sprintf("  %s: %s at %s\n    signer: %s", termsafe.Line(t.Module),
			termsafe.Line(t.Source.Ref), termsafe.Line(t.Source.Digest), termsafe.Line(t.Source.Signer)))
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "\nSOURCES (%d; tools.sources, the signer as verified at install or update):\n%s\n", len(lines), strings.Join(lines, "\n"))
	}
}

// printTasks lists the tools that may or must run as MCP tasks, under
// their task budget instead of the interactive timeout; a list of tools
// that run none (the default) prints nothing.
func printTasks(w io.Writer, tools []toolRow) {
	var lines []string
	for _, t := range tools {
		if t.TaskSupport == tool.TaskForbidden && t.TaskSetBy == "" {
			continue
		}
		by := "its descriptor"
		if t.TaskSetBy != "" {
			by = t.TaskSetBy
		}
		lines = append(lines, fmt.Sprintf("  %s: %s (%s)", termsafe.Line(t.Name), t.TaskSupport, by))
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "\nTASKS (%d; optional or required run as MCP tasks under tools.limits.<tool>.task_timeout and task_fuel):\n%s\n",
			len(lines), strings.Join(lines, "\n"))
	}
}

// oneLine is a reason on one line of a terminal: the lines of a reason
// warden joined (one per problem) are separated by "; ", the rest escaped.
func oneLine(reason string) string {
	return termsafe.Message(strings.ReplaceAll(reason, "\n", "; "))
}

// printRefusals lists, under the table, the tools not served because
// several modules describe their name, and the grant entries that give a
// served tool nothing because they belong to another module. Names in them
// are validated tool and module names, safe to print.
func printRefusals(w io.Writer, refused []catalog.Refusal, elsewhere []string) {
	if len(refused) > 0 {
		fmt.Fprintf(w, "\nREFUSED (%d; not served):\n", len(refused))
		for _, r := range refused {
			fmt.Fprintf(w, "  %s (module %s): %s\n", r.Tool, r.Module, r.Reason)
		}
	}
	if len(elsewhere) > 0 {
		fmt.Fprintf(w, "\nGRANTS OF ANOTHER MODULE (%d; nothing granted):\n", len(elsewhere))
		for _, e := range elsewhere {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// summary is c.Summary() escaped for a terminal, bounded like a description.
func summary(c tool.Capabilities) string {
	return termsafe.Bound(c.Summary(), termsafe.MaxText, false)
}

func newCallCmd(g *globalFlags) *cobra.Command {
	var session string
	var asTask bool
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
			// One call: it runs on the interpreter when the module is not
			// compiled in the cache, and the process exits as it answers.
			oneShot(a)
			// Only what serves args[0] loads: the other modules are listed
			// from their cached manifests or not loaded at all.
			for _, err := range a.Catalog().LoadFor(cmd.Context(), args[0]) {
				logger.Warn("tool not loaded", "error", err)
			}
			c := mcpserver.Call{Pass: mcpserver.LocalPass(),
				Name: args[0], Arguments: json.RawMessage(arguments), Session: session,
				Observer: stderrObserver{logger},
			}
			var res *tool.Result
			if asTask {
				res, err = callAsTask(cmd.Context(), a, c, cmd.ErrOrStderr(), logger)
			} else {
				res, err = a.Call(cmd.Context(), c)
			}
			var te *taskEnded
			if errors.As(err, &te) {
				return err
			}
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
	cmd.Flags().BoolVar(&asTask, "task", false, "run the call as an MCP task on the config's task store, under the tool's task budgets; Ctrl-C cancels it")
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
	var output string
	cmd := &cobra.Command{
		Use:   "inspect FILE.wasm|MODULE",
		Short: "Show a module's tools, imports, exports and requested capabilities",
		Long: `Show what a module is before you install it: its tools' descriptors, the host
functions it imports, its exports and the capabilities each tool requests. Give a
.wasm file, or the name of a module installed in tools.dir. Nothing of the module
runs beyond _initialize and describe, inside the sandbox. The output is JSON
(docs/config.md, "Output for scripts", describes its fields); -o table is a
summary for reading.`,
		Example: `  warden inspect ./build/linecount.wasm
  warden inspect hash -o table`,
		Args: cobraArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			a, _, err := g.start(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close(cmd.Context())
			path, err := inspectPath(a.Config(), args[0])
			if err != nil {
				return err
			}
			m, err := a.Runtime().LoadFile(cmd.Context(), path, runlimits.Module(a.Config(), catalog.ModuleName(path)))
			if err != nil {
				return err
			}
			defer m.Close(cmd.Context())
			if output == outputTable {
				return printInspectTable(cmd.OutOrStdout(), inspectOf(m))
			}
			return writeJSON(cmd.OutOrStdout(), inspectOf(m))
		},
	}
	addOutputFlag(cmd, &output, outputJSON)
	return cmd
}

// inspectPath is the file inspect loads for arg: arg itself when it is a
// file, else the installed module of that name in the tools dir (found
// as install finds it, ignoring case).
func inspectPath(cfg *config.Config, arg string) (string, error) {
	if _, err := os.Stat(arg); err == nil || strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".wasm") {
		return arg, nil // a missing file fails to load, naming it
	}
	path, exists, err := install.ModuleFile(cfg.Tools.Dir, arg)
	if err != nil {
		return "", err
	}
	if !exists {
		return "", usagef("no file %s, and no module %s installed in %s (see `warden tools`)", termsafe.Line(arg), termsafe.Line(arg), cfg.Tools.Dir)
	}
	return path, nil
}

// inspection is inspect's JSON: a stable interface for scripts
// (docs/config.md, "Output for scripts"), so fields are only added.
type inspection struct {
	Module   string            `json:"module"`
	SHA256   string            `json:"sha256"`
	Imports  []string          `json:"imports"`
	Exports  []string          `json:"exports"`
	Tools    []tool.Descriptor `json:"tools"`
	Rejected []rejectedTool    `json:"rejected,omitempty"`
}

// rejectedTool is a tool a module describes that failed validation.
// Module is set in `warden tools`' list, which spans modules.
type rejectedTool struct {
	Name   string `json:"name"`
	Module string `json:"module,omitempty"`
	Reason string `json:"reason"`
}

func inspectOf(m *runtime.Module) inspection {
	out := inspection{Module: m.Name(), SHA256: m.SHA256(), Imports: m.Imports(), Exports: m.Exports()}
	for _, t := range m.Tools() {
		out.Tools = append(out.Tools, t.Descriptor)
	}
	for _, r := range m.Rejected() {
		out.Rejected = append(out.Rejected, rejectedTool{Name: r.Name, Reason: r.Reason.Error()})
	}
	return out
}

// printInspectTable prints in for reading: the module, then a row per
// tool with what it requests, then the rejected tools. Everything but the
// hash comes from the module: escaped.
func printInspectTable(w io.Writer, in inspection) error {
	fmt.Fprintf(w, "MODULE   %s\nSHA256   %s\nIMPORTS  %s\nEXPORTS  %s\n\n", termsafe.Line(in.Module), in.SHA256,
		termsafe.Line(importSummary(in.Imports)), termsafe.Line(strings.Join(in.Exports, " ")))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tVERSION\tREQUESTED\tDESCRIPTION")
	for _, d := range in.Tools {
		version := d.Version
		if version == "" {
			version = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", termsafe.Line(d.Name), termsafe.Line(version), summary(d.Capabilities), termsafe.Line(firstSentence(d.Description)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(in.Rejected) > 0 {
		fmt.Fprintf(w, "\nREJECTED (%d; not served):\n", len(in.Rejected))
		for _, r := range in.Rejected {
			fmt.Fprintf(w, "  %s: %s\n", termsafe.Line(r.Name), termsafe.Message(r.Reason))
		}
	}
	return nil
}

// importSummary counts imports ("module.function") by module, in the
// order modules first appear: "wasi_snapshot_preview1 (19), warden (2)".
// The functions are in -o json.
func importSummary(imports []string) string {
	var order []string
	counts := map[string]int{}
	for _, imp := range imports {
		module, _, _ := strings.Cut(imp, ".")
		if counts[module] == 0 {
			order = append(order, module)
		}
		counts[module]++
	}
	if len(order) == 0 {
		return "-"
	}
	parts := make([]string, len(order))
	for i, module := range order {
		parts[i] = fmt.Sprintf("%s (%d)", module, counts[module])
	}
	return strings.Join(parts, ", ")
}

// firstSentence is description up to its first ". " (a table row, not
// the whole text: -o json has it).
func firstSentence(description string) string {
	if i := strings.Index(description, ". "); i >= 0 {
		return description[:i+1]
	}
	return description
}
