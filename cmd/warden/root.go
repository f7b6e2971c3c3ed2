package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/redact"
	"github.com/warden-run/warden/internal/termsafe"
)

// version is stamped at release builds with -ldflags "-X main.version=...".
var version = "dev"

// globalFlags are the flags every command takes.
type globalFlags struct {
	configPath string
	logLevel   string
	// configFrom says where configPath came from: "flag", "env", "found"
	// (config.Find), or "" when there is no config; noConfig then says why
	// (see chooseConfig).
	configFrom string
	noConfig   error
	// secrets are values from flags that the logs redact beside the
	// config's (serve's --token).
	secrets []string
}

func newRoot() *cobra.Command {
	var g globalFlags
	root := &cobra.Command{
		Use:   "warden",
		Short: "Run WebAssembly tools in a sandbox and serve them over MCP",
		Long: `warden loads tools compiled to WebAssembly, runs every call under fuel, a deadline and
a memory limit, gives each tool only the capabilities config.yaml grants it, and serves
them to AI agents as an MCP server.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		return g.chooseConfig(cmd)
	}
	root.PersistentFlags().StringVarP(&g.configPath, "config", "c", "",
		"config file (env WARDEN_CONFIG; default: config.yaml here or in the nearest parent folder)")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "", "debug, info, warn or error (default: log.level from config)")
	root.AddCommand(newToolsCmd(&g), newCallCmd(&g), newInspectCmd(&g), newServeCmd(&g),
		newInstallCmd(&g), newSyncCmd(&g), newUpdateCmd(&g), newPublishCmd(&g), newGrantCmd(&g), newRevokeCmd(&g),
		newNewCmd(), newDevCmd(&g), newMCPConfigCmd(&g), newMigrateCmd(&g))
	return root
}

// cobraArgs wraps an argument validator so its failures are usage errors.
func cobraArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
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
		return nil, nil, usageError{err}
	}
	level := cfg.Log.Level
	if g.logLevel != "" {
		level = g.logLevel
	}
	var slogLevel slog.Level
	if err := slogLevel.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, nil, usagef("--log-level: %v", err)
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
