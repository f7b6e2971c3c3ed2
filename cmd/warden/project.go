package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/warden-run/warden/config"
)

// chooseConfig sets the config every command reads: --config, else
// $WARDEN_CONFIG, else the config.yaml config.Find finds from the working
// directory up. Without one, configPath stays "" and noConfig says why; a
// command that needs a project refuses with it (requireConfig), one that
// does not runs on the defaults and says so (noteDefaults). Failing here
// would refuse `warden new` in a folder under another program's config.
func (g *globalFlags) chooseConfig(cmd *cobra.Command) error {
	switch {
	case cmd.Flags().Changed("config"):
		g.configFrom = "flag"
		return nil
	case os.Getenv("WARDEN_CONFIG") != "":
		g.configPath, g.configFrom = os.Getenv("WARDEN_CONFIG"), "env"
		return nil
	}
	cwd, err := os.Getwd()
	if err != nil {
		g.noConfig = fmt.Errorf("no config: the working directory: %w", err)
		return nil
	}
	path, err := config.Find(cwd)
	if err != nil {
		g.noConfig = err
		return nil
	}
	if err := sniffFound(path); err != nil {
		g.noConfig = err
		return nil
	}
	g.configPath, g.configFrom = path, "found"
	return nil
}

// sniffFound refuses a found config.yaml that is not warden's: in another
// program's folder (or below it), warden would otherwise fail on (or, were
// the file empty of our keys, silently serve nothing from) that program's
// config. A config named by --config or WARDEN_CONFIG is read as given.
func sniffFound(path string) error {
	keys, ok, err := config.Sniff(path)
	if err != nil {
		return usageError{err}
	}
	if ok {
		return nil
	}
	return hintError{
		err: fmt.Errorf("%s does not look like a warden config", path),
		hint: "its top-level keys: " + strings.Join(keys, ", ") + "\n" +
			"warden's top-level keys: " + strings.Join(config.TopLevelKeys(), ", ") + "\n" +
			"point warden at its config with --config PATH or WARDEN_CONFIG=PATH",
	}
}

// requireConfig is the check of every command that needs a project (it
// lists, calls, grants or installs the project's tools): with no config it
// fails, saying where it looked and how to give one, instead of running on
// an empty default project. extra lines are added to the advice.
func (g *globalFlags) requireConfig(extra ...string) error {
	if g.configPath != "" {
		return nil
	}
	var notFound *config.NotFoundError
	var foreign *config.ForeignError
	var hint hintError
	switch {
	case g.noConfig == nil: // --config "" (or dev's DIR without one)
		hint = hintError{err: errors.New("no config file given"),
			hint: "point warden at a config with --config PATH or WARDEN_CONFIG=PATH"}
	case errors.As(g.noConfig, &hint):
		return g.noConfig
	case errors.As(g.noConfig, &notFound):
		hint = hintError{
			err: fmt.Errorf("no config.yaml in %s or any parent folder", notFound.Dir),
			hint: "looked for: --config (not given), $WARDEN_CONFIG (not set), config.yaml in " +
				strings.Join(notFound.Looked, ", ") + "\n" +
				"create a project with warden new NAME, or point warden at a config with --config PATH or WARDEN_CONFIG=PATH",
		}
	case errors.As(g.noConfig, &foreign):
		hint = hintError{
			err: foreign,
			hint: "someone else's config.yaml would grant your tools what they chose\n" +
				"to use it anyway, pass it: --config " + foreign.Path,
		}
	default:
		hint = hintError{err: fmt.Errorf("no config: %w", g.noConfig),
			hint: "point warden at a config with --config PATH or WARDEN_CONFIG=PATH"}
	}
	for _, line := range extra {
		hint.hint += "\n" + line
	}
	return hint
}

// noteDefaults says, on stderr, that a command runs without a config (on
// warden's defaults, tools from ./bin/tools) and why: a command that works
// without a project must not pass for one that found it.
func (g *globalFlags) noteDefaults() {
	if g.configPath != "" {
		return
	}
	why := "no config file"
	var foreign *config.ForeignError
	if errors.As(g.noConfig, new(*config.NotFoundError)) {
		why = "no config.yaml here or in any parent folder"
	} else if errors.As(g.noConfig, &foreign) {
		why = "the config.yaml found is not yours (" + foreign.Path + ")"
	} else if errors.As(g.noConfig, new(hintError)) {
		why = "the config.yaml found is not warden's"
	}
	cwd, _ := os.Getwd()
	fmt.Fprintf(os.Stderr, "warden: note: %s; using the defaults (tools from %s)\n", why, filepath.Join(cwd, "bin", "tools"))
}

// mcpConfigHint is the advice for a command an MCP client runs: the client
// starts warden in a folder of its own choosing.
const mcpConfigHint = "for an MCP client, warden mcp-config claude|vscode|cursor --config PATH prints a snippet that does"
