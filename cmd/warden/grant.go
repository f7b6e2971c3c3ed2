package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/install"
	"github.com/warden-run/warden/internal/suggest"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

const grantKeysHelp = `Keys (values are comma-separated; repeat KEY=VALUE for more):
  fs.read=PATH        read files under PATH ("." is the project root, "notes:x" an extra root)
  fs.write=PATH       write files under PATH
  memory=LEVEL        the project memory store: read or read-write
  memory.topics=T     limit memory to topics under T (default: every topic)
  lsp=LANG            query the language server of LANG (go, or one in lsp.languages)
  net=HOST            HTTP to HOST: api.example.com, *.example.com, http://host:8080, "host private"
  env=KEY             read the value env.values.KEY`

func newGrantCmd(g *globalFlags) *cobra.Command {
	var module string
	cmd := &cobra.Command{
		Use:   "grant TOOL KEY=VALUE...",
		Short: "Grant a tool a capability in config.yaml",
		Long: `Add to what TOOL may use, under tools.grants.TOOL in config.yaml. The file keeps its
comments and layout; the change is validated (the whole config must load) before the
file is replaced, and a running ` + "`warden serve`" + ` applies it from the next call.

A grant belongs to a module, written as tools.grants.TOOL.module: it applies only while
that module serves TOOL, never to another module describing a tool of the same name.
The module is --module when given, else the one the entry already names (or, with no
module field, the module named like the tool), else the installed module serving TOOL,
else a module named like the tool.

` + grantKeysHelp,
		Example: `  warden grant symbols fs.read=src,docs lsp=go
  warden grant fetch net=api.github.com env=GITHUB_TOKEN
  warden grant definition --module lsp lsp=go fs.read=.
  warden grant notes memory=read-write memory.topics=arch`,
		Args: cobraArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			changes, err := parseChanges(args[0], args[1:], true)
			if err != nil {
				return err
			}
			// A grant no call could use is refused, by the gate the call
			// goes through (app.Grants); one naming nothing yet is written
			// with a warning.
			// A value config refuses is refused first, in config's words,
			// which show a URL-like value without its userinfo: the gate's
			// words quote the value as typed.
			grant := func(d *config.Document) error { return d.Grant(args[0], changes...) }
			var warnings []string
			if g.configPath != "" {
				if cfg, err := config.Load(g.configPath); err == nil {
					if judge, err := app.NewGrants(cfg); err == nil {
						if err := config.CheckEdit(g.configPath, grant); err != nil {
							return err
						}
						if warnings, err = judge.CheckChanges(args[0], changes); err != nil {
							return err
						}
					}
				}
			}
			if err := g.editGrants(cmd, args[0], module, true, grant); err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "warden: warning: %s\n", termsafe.Message(w))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&module, "module", "", "the module the grant belongs to (its file name without .wasm)")
	return cmd
}

func newRevokeCmd(g *globalFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "revoke TOOL KEY[=VALUE]...",
		Short: "Take a capability back from a tool in config.yaml",
		Long: `Remove from what TOOL may use: the values given, or the whole key when no value is
given (` + "`revoke TOOL net`" + `), or everything with --all. Revoking the memory level
granted (or read, which read-write includes) revokes memory and its topics; to step
read-write down to read, revoke memory and grant memory=read. Revoking the last memory
topic revokes memory too (a level without topics would be the whole store). What
remains granted is printed. Like grant, the file keeps its comments and
layout and is replaced only once the result validates.

` + grantKeysHelp,
		Example: `  warden revoke symbols fs.read=docs
  warden revoke fetch net
  warden revoke fetch --all`,
		Args: cobraArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if all != (len(args) == 1) {
				return usagef("give KEY[=VALUE] arguments or --all, not both or neither")
			}
			if all {
				return g.editGrants(cmd, args[0], "", false, func(d *config.Document) error { return d.RevokeAll(args[0]) })
			}
			changes, err := parseChanges(args[0], args[1:], false)
			if err != nil {
				return err
			}
			return g.editGrants(cmd, args[0], "", false, func(d *config.Document) error { return d.Revoke(args[0], changes...) })
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "revoke everything the tool is granted")
	return cmd
}

func parseChanges(toolName string, args []string, needValue bool) ([]config.GrantChange, error) {
	var changes []config.GrantChange
	for _, arg := range args {
		c, err := config.ParseGrantChange(arg)
		if err != nil {
			return nil, usagef("tools.grants.%s: %v", toolName, err)
		}
		if needValue && len(c.Values) == 0 {
			return nil, usagef("tools.grants.%s: %s needs a value, e.g. %s=...", toolName, arg, c.Key)
		}
		changes = append(changes, c)
	}
	return changes, nil
}

// editGrants edits the config file and prints the tool's grants as they
// now are, next to what the tool requests when it is installed. With bind,
// the entry's module field is written too (see grantModule).
func (g *globalFlags) editGrants(cmd *cobra.Command, toolName, module string, bind bool, edit func(*config.Document) error) error {
	if err := g.requireConfig(); err != nil {
		return err
	}
	path := g.configPath
	ctx := cmd.Context()
	// The installed tools: to find the module a new grant belongs to, and
	// to show the request beside the grant.
	a, _, startErr := g.start(ctx)
	if startErr == nil {
		defer a.Close(ctx)
		a.Catalog().LoadTools(ctx)
	}
	if bind {
		if module == "" && a != nil {
			if err := unknownTool(a, toolName); err != nil {
				return err
			}
		}
		var err error
		if module, err = grantModule(a, toolName, module); err != nil {
			return err
		}
		inner := edit
		edit = func(d *config.Document) error {
			if err := d.BindGrant(toolName, module); err != nil {
				return err
			}
			return inner(d)
		}
	}
	cfg, err := config.EditFile(path, edit)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	bound, _, _ := cfg.GrantModule(toolName)
	fmt.Fprintf(out, "%s: tools.grants.%s (module %s) in %s\n", toolName, configkey.Fold(toolName), bound, cfg.File)
	// What a call would be allowed: a grant no call can use (written
	// before, or by hand) is not shown as granted but named below.
	judge, judgeErr := app.NewGrants(cfg)
	var unusable []app.GrantProblem
	usable := func(granted tool.Capabilities) tool.Capabilities {
		if judgeErr != nil {
			return granted
		}
		status := judge.Status(toolName, granted)
		unusable = status.Unusable
		return status.Usable
	}
	printUnusable := func() {
		for _, p := range unusable {
			fmt.Fprintf(out, "not granted: tools.grants.%s.%s: %s\n", configkey.Fold(toolName), p.Key, termsafe.Message(p.Error()))
		}
	}
	if a != nil {
		if t, ok := a.Catalog().Table().Tool(toolName); ok {
			granted, elsewhere := cfg.Grants(toolName, t.Module().Name())
			requested := t.Descriptor.Capabilities
			granted = usable(granted)
			printCapabilities(out, "  ", requested, granted, install.Missing(requested, granted))
			printUnusable()
			if elsewhere != nil {
				fmt.Fprintf(out, "note: %v\n", elsewhere)
			}
			return nil
		}
	}
	granted, _ := cfg.Grants(toolName, bound)
	printGrants(out, "  ", usable(granted))
	printUnusable()
	fmt.Fprintf(out, "(no installed tool is named %s; the grant applies once module %s serves one)\n", toolName, bound)
	return nil
}

// grantModule is the module a grant of toolName belongs to: flag when set;
// else the module the config entry already names, so that adding to an
// entry never moves it (unless another module serves the tool now: then
// the person must say which, with --module); else a pinned module serving
// exactly that name now;
// else the module named like the tool (the default binding). A new entry is
// never bound to an unpinned module of another name on its own say-so: that
// module may be an impostor of a tool not installed yet, so the person must
// name it with --module. a may be nil (the tools could not load).
func grantModule(a *app.App, toolName, flag string) (string, error) {
	if flag != "" {
		if !runtime.ValidModuleName(flag) {
			return "", usagef("--module %q is not a module name (%s)", flag, tool.NameRule)
		}
		return flag, nil
	}
	byDefault := configkey.Fold(toolName)
	if a == nil {
		return byDefault, nil
	}
	if module, _, ok := a.Config().GrantModule(toolName); ok {
		// The entry belongs to another module than the one serving the
		// tool now: adding to it would widen a module the person is not
		// looking at (the output would show the served tool granted
		// nothing). They name which one.
		if t, served := a.Catalog().Table().Tool(toolName); served && t.Module().Name() != module {
			return "", usagef("tools.grants.%s belongs to module %s, but tool %s is served by module %s; say which module the grant is for: "+
				"--module %s adds to that entry, --module %s gives the serving module a grant of its own (once the entry is emptied)",
				configkey.Fold(toolName), module, toolName, t.Module().Name(), module, t.Module().Name())
		}
		return module, nil
	}
	var modules, pinned []string
	for _, t := range a.Catalog().Table().Candidates(toolName) {
		name := t.Module().Name()
		modules = append(modules, name)
		if a.Catalog().Table().Pinned(t.Module()) && t.Descriptor.Name == toolName {
			pinned = append(pinned, name)
		}
	}
	switch {
	case len(pinned) == 1 && len(modules) == 1:
		return pinned[0], nil
	case len(modules) == 0 || len(modules) == 1 && modules[0] == byDefault:
		return byDefault, nil
	case len(modules) == 1:
		return "", usagef("tool %s is described by module %s, which is not pinned and not named like the tool; "+
			"if you reviewed it, say so with --module %s (or warden install it first)", toolName, modules[0], modules[0])
	}
	return "", usagef("modules %s all describe a tool named %s; say which one the grant belongs to with --module",
		strings.Join(modules, ", "), toolName)
}

// unknownTool refuses a grant to a tool name no installed module serves
// when one that is served is spelled alike: a typo would write a grant
// that applies to nothing. A grant ahead of an install names its module
// with --module.
func unknownTool(a *app.App, toolName string) error {
	table := a.Catalog().Table()
	if _, ok := table.Tool(toolName); ok || len(table.Candidates(toolName)) > 0 {
		return nil
	}
	var names, folded []string
	for _, t := range table.Tools() {
		names = append(names, t.Descriptor.Name)
		folded = append(folded, configkey.Fold(t.Descriptor.Name))
	}
	i := suggest.Closest(configkey.Fold(toolName), folded, 2) // more than two edits away is another name
	if i < 0 {
		return nil
	}
	best := names[i]
	return usagef("no installed tool is named %s; did you mean %s? (to grant a tool before it is installed, name its module: --module %s)",
		toolName, best, configkey.Fold(toolName))
}

func printGrants(w io.Writer, indent string, granted tool.Capabilities) {
	if granted.IsZero() {
		fmt.Fprintf(w, "%snothing granted\n", indent)
		return
	}
	rows := capabilityRows(granted)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%sCAPABILITY\tGRANTED\n", indent)
	for _, key := range config.GrantKeys {
		if rows[key] != "" {
			fmt.Fprintf(tw, "%s%s\t%s\n", indent, key, rows[key])
		}
	}
	tw.Flush()
}
