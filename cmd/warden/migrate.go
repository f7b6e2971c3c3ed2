package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/termsafe"
)

func newMigrateCmd(g *globalFlags) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Bind grants written before grants belonged to modules to the pinned module serving each tool",
		Long: `A grant belongs to a module (tools.grants.TOOL.module); an entry without a module field
belongs to the module named like the tool. A config written before that grants nothing
to a tool served by a module of another name: every Extism plugin's tools, the LSP
module's tools, any module serving several tools.

migrate lists each such entry, what it grants, and the module: line it would add to
bind it to the module that serves the tool now, then writes them once you confirm (the
file keeps its comments and layout, and is replaced only once the result validates).
Only pinned modules are offered: a pin is the version you reviewed at install, and a
binding hands it everything the entry grants. An unpinned module, or a tool that several
modules describe, is listed with what to do instead. Running it again changes nothing.`,
		Example: `  warden migrate
  warden migrate --yes      # write without asking, after reviewing the list`,
		Args: cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.requireConfig(); err != nil {
				return err
			}
			ctx := cmd.Context()
			a, err := g.startWithInstalled(cmd)
			if err != nil {
				return err
			}
			defer a.Close(ctx)
			out := cmd.OutOrStdout()
			bind, skip := legacyGrants(a)
			printMigration(out, a.Config(), bind, skip)
			if len(bind) == 0 {
				return nil
			}
			if !yes {
				if !isTerminal(cmd.InOrStdin()) {
					return usagef("nothing written: confirm on a terminal, or pass --yes to write these bindings")
				}
				fmt.Fprintf(out, "\nWrite %s to %s? [y/N] ", countOf(len(bind), "binding", "bindings"), a.Config().File)
				if !confirmed(out, cmd.InOrStdin()) {
					fmt.Fprintln(out, "Nothing written.")
					return nil
				}
			}
			_, err = config.EditFile(a.Config().File, func(d *config.Document) error {
				for _, b := range bind {
					if err := d.AdoptGrant(b.key, b.module); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "Wrote %s to %s.\n", countOf(len(bind), "binding", "bindings"), a.Config().File)
			return nil
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "write the bindings without asking")
	return cmd
}

// legacyBinding is a grant entry without a module field whose tool a
// pinned module of another name serves, and that module.
type legacyBinding struct {
	key    string // tools.grants.<key>
	tool   string // as the tool spells it
	module string
	sha256 string
}

// legacySkip is a grant entry without a module field that migrate does not
// bind, and why.
type legacySkip struct {
	key, why string
}

// legacyGrants finds, in the config in force and the tools loaded, the
// entries migrate binds and the ones it leaves, each sorted by key. Names in
// them are validated tool and module names.
func legacyGrants(a *app.App) (bind []legacyBinding, skip []legacySkip) {
	cfg := a.Config()
	tab := a.Catalog().Table()
	for _, t := range tab.Tools() {
		key := configkey.Fold(t.Descriptor.Name)
		m := t.Module()
		bound, explicit, ok := cfg.GrantModule(t.Descriptor.Name)
		if !ok || explicit || bound == m.Name() {
			continue
		}
		if !tab.Pinned(m) {
			skip = append(skip, legacySkip{key, fmt.Sprintf("tool %s is served by module %s, which is not pinned: "+
				"a pin is the version you reviewed, and a binding hands that module everything the entry grants; "+
				"warden install it (or grant %s --module %s by hand), then migrate again", t.Descriptor.Name, m.Name(), key, m.Name())})
			continue
		}
		bind = append(bind, legacyBinding{key: key, tool: t.Descriptor.Name, module: m.Name(), sha256: m.SHA256()})
	}
	seen := map[string]bool{}
	for _, r := range a.Catalog().Refused() {
		key := configkey.Fold(r.Tool)
		if seen[key] || r.ServedBy != "" {
			continue
		}
		seen[key] = true
		if _, explicit, ok := cfg.GrantModule(r.Tool); !ok || explicit {
			continue
		}
		skip = append(skip, legacySkip{key, fmt.Sprintf("tool %s is described by several modules (%s) and none serves it: "+
			"choose one with warden grant %s --module MODULE", r.Tool, strings.Join(r.Modules, ", "), key)})
	}
	slices.SortFunc(bind, func(x, y legacyBinding) int { return strings.Compare(x.key, y.key) })
	slices.SortFunc(skip, func(x, y legacySkip) int { return strings.Compare(x.key, y.key) })
	return bind, skip
}

// printMigration shows the review: per entry, what it grants (which the
// binding hands to the module) and the line that would be added.
func printMigration(w io.Writer, cfg *config.Config, bind []legacyBinding, skip []legacySkip) {
	if len(bind) == 0 && len(skip) == 0 {
		fmt.Fprintf(w, "Nothing to migrate: every grant entry in %s names its module or belongs to the module named like its tool.\n", cfg.File)
		return
	}
	if len(bind) > 0 {
		fmt.Fprintf(w, "Grant entries without a module field, and the pinned module now serving each tool (%s):\n", cfg.File)
		for _, b := range bind {
			granted, _ := cfg.Grants(b.tool, b.key) // as the entry grants it today: to module b.key
			what := summary(granted)
			if conf := cfg.ToolConfig(b.tool, b.key); len(conf) > 0 {
				what += "; config: " + strings.Join(slices.Sorted(maps.Keys(conf)), ", ")
			}
			fmt.Fprintf(w, "\n  tools.grants.%s (grants: %s)\n", b.key, termsafe.Line(what))
			fmt.Fprintf(w, "  + module: %s    # module %s (pinned sha256 %s) serves tool %s\n", b.module, b.module, b.sha256[:12], b.tool)
		}
	}
	if len(skip) > 0 {
		fmt.Fprintf(w, "\nNot bound:\n")
		for _, s := range skip {
			fmt.Fprintf(w, "  tools.grants.%s: %s\n", s.key, s.why)
		}
	}
}

// countOf is n and the noun for it: "1 binding", "2 bindings".
func countOf(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, plural(n, one, many))
}
