package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/redact"
	"github.com/warden-run/warden/internal/termsafe"
)

// version is stamped at release builds with -ldflags "-X main.version=...".
var version = "dev"

// globalFlags are the flags every command that reads the config takes.
type globalFlags struct {
	configPath string
	logLevel   string
	// verbose asks a one-shot command for its info lines (what it loads
	// and compiles), which it leaves out otherwise.
	verbose bool
	// keepLogs is set for a command that runs until stopped (serve): it
	// logs at log.level from config, where a one-shot command is quiet.
	keepLogs bool
	// configFrom says where configPath came from: "flag", "env", "found"
	// (config.Find), or "" when there is no config; noConfig then says why
	// (see chooseConfig).
	configFrom string
	noConfig   error
	// secrets are values from flags that the logs redact beside the
	// config's (serve's --token).
	secrets []string
}

// keepLogsAnnotation marks a command (in cobra.Command.Annotations) that
// runs until stopped and so logs as config says: serve. Every other
// command is one-shot and logs only warnings and errors unless asked.
const keepLogsAnnotation = "warden.keep-logs"

// configFreeCommands take none of the global flags: they read no config
// and log nothing, so -c or --log-level there would be a flag that does
// nothing.
var configFreeCommands = []string{"new", "version", "secret"}

func newRoot() *cobra.Command {
	var g globalFlags
	root := &cobra.Command{
		Use:   "warden",
		Short: "Run WebAssembly tools in a sandbox and serve them over MCP",
		Long: `warden loads tools compiled to WebAssembly, runs every call under fuel, a deadline and
a memory limit, gives each tool only the capabilities config.yaml grants it, and serves
them to AI agents as an MCP server.`,
		// --version (no -v, which is --verbose) prints what `warden version` does.
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate(thisVersion())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Flags().Lookup("config") == nil {
			return nil // a command that reads no config
		}
		g.keepLogs = cmd.Annotations[keepLogsAnnotation] != ""
		return g.chooseConfig(cmd)
	}
	root.AddCommand(newToolsCmd(&g), newCallCmd(&g), newInspectCmd(&g), newServeCmd(&g),
		newInstallCmd(&g), newSyncCmd(&g), newUpdateCmd(&g), newPublishCmd(&g), newGrantCmd(&g), newRevokeCmd(&g), newConsoleCmd(&g),
		newNewCmd(), newDevCmd(&g), newMCPConfigCmd(&g), newVersionCmd(), newMigrateCmd(&g), newCacheCmd(&g), newSecretCmd(&g),
		newTasksCmd(&g))
	// The global flags are each command's own (not persistent), so that a
	// command without a config (new, version, completion) neither offers
	// nor accepts them. The root has them too, hidden (they mean nothing
	// without a command), for cobra to read `warden -v call ...` (a flag
	// before the command) right.
	hidden := g.flags()
	hidden.VisitAll(func(f *pflag.Flag) { f.Hidden = true })
	root.Flags().AddFlagSet(hidden)
	root.Flags().Bool("version", false, "print the version, as warden version does")
	global := g.flags()
	for _, cmd := range root.Commands() {
		if !slices.Contains(configFreeCommands, cmd.Name()) {
			cmd.Flags().AddFlagSet(global)
		}
	}
	return root
}

// flags defines the global flags on a set of their own. The config's
// default is not shown as a value (it depends on the folder warden runs
// in); PersistentPreRunE applies it.
func (g *globalFlags) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("global", pflag.ContinueOnError)
	fs.StringVarP(&g.configPath, "config", "c", "",
		"config file (default: $WARDEN_CONFIG, else config.yaml here or in the nearest parent folder)")
	fs.StringVar(&g.logLevel, "log-level", "", "debug, info, warn or error (default: log.level from config for serve, warn for other commands)")
	fs.BoolVarP(&g.verbose, "verbose", "v", false, "log at info level: what a command loads and compiles (--log-level for another level)")
	return fs
}

// errUsageShown is a usage error whose explanation, the command's usage,
// is on stderr already.
var errUsageShown = errors.New("usage shown")

// cobraArgs wraps an argument validator so its failures are usage errors.
// A command that needs arguments and got none shows its usage instead of
// an arity error: the person is asking what it takes.
func cobraArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			if len(args) == 0 {
				cmd.SetOut(cmd.ErrOrStderr()) // the usage goes to stderr; stdout is for results
				_ = cmd.Usage()
				return usageError{errUsageShown}
			}
			return usageError{err}
		}
		return nil
	}
}

// start loads the config and builds the app; logs go to stderr only.
func (g *globalFlags) start(ctx context.Context) (*app.App, *slog.Logger, error) {
	g.noteDefaults()
	cfg, err := config.Load(g.configPath)
	if err != nil {
		return nil, nil, usageError{textError{err}}
	}
	slogLevel, err := g.level(cfg.Log.Level)
	if err != nil {
		return nil, nil, err
	}
	// Every record is escaped as the terminal output is: stderr is a terminal.
	// Before that, the config's secret values are masked (package redact):
	// the text as written, before escaping changes it.
	secrets := &redact.Secrets{}
	secrets.Set(append(app.SecretValues(cfg), g.secrets...)) // app.New logs too
	logger := slog.New(termsafe.NewTextHandler(
		termsafe.NewHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slogLevel})), secrets.Redact))
	a, err := app.New(ctx, cfg, logger)
	if err != nil {
		return nil, nil, fmt.Errorf("start: %w", err)
	}
	a.RedactWith(secrets, g.secrets...)
	return a, logger, nil
}

// level is the level a command logs at: --log-level when given; else
// log.level from config for serve; else, for a one-shot command, warn, or
// info with --verbose (or log.level when that is more severe): a command
// run once prints its result, not what it loaded and compiled on the way.
func (g *globalFlags) level(configured string) (slog.Level, error) {
	var level slog.Level
	if g.logLevel != "" {
		if err := level.UnmarshalText([]byte(strings.ToUpper(g.logLevel))); err != nil {
			return 0, usagef("--log-level: %v", err)
		}
		return level, nil
	}
	if err := level.UnmarshalText([]byte(strings.ToUpper(configured))); err != nil {
		return 0, usagef("log.level: %v", err)
	}
	if g.keepLogs {
		return level, nil
	}
	quiet := slog.LevelWarn
	if g.verbose {
		quiet = slog.LevelInfo
	}
	return max(level, quiet), nil
}

// startWithInstalled starts the app and loads the installed tools, for a
// command that installs next to them (name collisions, the version being
// replaced). A module that fails to load cannot collide, so its error is
// only noted on stderr.
func (g *globalFlags) startWithInstalled(cmd *cobra.Command) (*app.App, error) {
	a, _, err := g.start(cmd.Context())
	if err != nil {
		return nil, err
	}
	for _, err := range a.Catalog().LoadTools(cmd.Context()) {
		fmt.Fprintln(cmd.ErrOrStderr(), "warden: note:", termsafe.Message(err.Error()))
	}
	return a, nil
}
