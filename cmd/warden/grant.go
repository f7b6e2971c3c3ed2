package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
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
	return &cobra.Command{
		Use:   "grant TOOL KEY=VALUE...",
		Short: "Grant a tool a capability in config.yaml",
		Long: `Add to what TOOL may use, under tools.grants.TOOL in config.yaml. The file keeps its
comments and layout; the change is validated (the whole config must load) before the
file is replaced, and a running ` + "`warden serve`" + ` applies it from the next call.

` + grantKeysHelp,
		Example: `  warden grant symbols fs.read=src,docs lsp=go
  warden grant fetch net=api.github.com env=GITHUB_TOKEN
  warden grant notes memory=read-write memory.topics=arch`,
		Args: cobraArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			changes, err := parseChanges(args[0], args[1:], true)
			if err != nil {
				return err
			}
			return g.editGrants(cmd, args[0], func(d *config.Document) error { return d.Grant(args[0], changes...) })
		},
	}
}

func newRevokeCmd(g *globalFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "revoke TOOL KEY[=VALUE]...",
		Short: "Take a capability back from a tool in config.yaml",
		Long: `Remove from what TOOL may use: the values given, or the whole key when no value is
given (` + "`revoke TOOL net`" + `), or everything with --all. Revoking memory=read-write leaves
read; revoking memory=read leaves nothing. Like grant, the file keeps its comments and
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
				return g.editGrants(cmd, args[0], func(d *config.Document) error { return d.RevokeAll(args[0]) })
			}
			changes, err := parseChanges(args[0], args[1:], false)
			if err != nil {
				return err
			}
			return g.editGrants(cmd, args[0], func(d *config.Document) error { return d.Revoke(args[0], changes...) })
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
// now are, next to what the tool requests when it is installed.
func (g *globalFlags) editGrants(cmd *cobra.Command, toolName string, edit func(*config.Document) error) error {
	path := g.configPath
	if path == "" {
		return usagef("no config file: create config.yaml or pass --config")
	}
	cfg, err := config.EditFile(path, edit)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	granted := cfg.Grants(toolName)
	fmt.Fprintf(out, "%s: tools.grants.%s in %s\n", toolName, toolName, cfg.File)

	// Show the request beside the grant when the tool is installed.
	ctx := cmd.Context()
	a, _, err := g.start(ctx)
	if err == nil {
		defer a.Close(ctx)
		a.LoadTools(ctx)
		if t, ok := a.Registry().Tool(toolName); ok {
			requested := t.Descriptor.Capabilities
			printCapabilities(out, "  ", requested, granted, app.Missing(requested, granted))
			return nil
		}
	}
	printGrants(out, "  ", granted)
	fmt.Fprintf(out, "(no installed tool is named %s; the grant applies once one is)\n", toolName)
	return nil
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
