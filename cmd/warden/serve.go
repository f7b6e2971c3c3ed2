package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/spf13/cobra"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/oauth"
	"github.com/warden-run/warden/mcpserver"
)

// useConfigAddr is what --http means without a value: server.http from
// config. The help shows it as the flag's optional value
// (--http ADDR[=server.http]), so it is named after that key.
const useConfigAddr = "server.http"

func newServeCmd(g *globalFlags) *cobra.Command {
	var addr, token, cpuProfile, execTrace string
	var pageSize, maxInFlight int
	var allowEmpty bool
	var queueWait time.Duration
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the tools as an MCP server (stdio, or streamable HTTP with --http)",
		Long: `Serve the loaded tools to an MCP client. By default over stdio: stdout carries the
protocol and nothing else, logs go to stderr. With --http, over streamable HTTP at /mcp
(both stateless 2026-07-28 requests and 2025-11-25 sessions) with /healthz beside it.
A bearer token (--token, server.token or WARDEN_SERVER_TOKEN) or OAuth (server.oauth:
warden checks access tokens from your authorization server, docs/auth.md) is required to
listen on anything but a loopback address.

Tools, grants and limits follow config.yaml and the tools directory while serving: a
changed config applies to the next call, and a .wasm file added, replaced or removed in
the tools directory is (re)loaded and clients are told the tool list changed.

The config is --config, else $WARDEN_CONFIG, else config.yaml in the working folder or
the nearest folder above it. With none of them serve stops and says where it looked
(--allow-empty serves the defaults instead); an MCP client starts warden from a folder
of its own choosing, so register it with --config (warden mcp-config prints the
snippet). A config.yaml found without any of warden's top-level keys is another
program's and is refused.`,
		Example: `  warden serve                        # the config: --config, else $WARDEN_CONFIG, else the project's config.yaml
  warden serve -c ~/tools/config.yaml
  warden serve --http                 # server.http from config, 127.0.0.1:7331 by default
  warden serve --http 0.0.0.0:7331 --token "$(cat token)"`,
		Annotations: map[string]string{keepLogsAnnotation: "yes"},
		Args:        cobraArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			// --http takes an optional value, so pflag reads "--http ADDR" as
			// "--http" followed by the argument ADDR: take it back.
			if len(args) == 1 {
				if addr != useConfigAddr {
					return usagef("serve takes no arguments (did you mean --http %s?)", args[0])
				}
				addr = args[0]
			}
			if !allowEmpty {
				if err := g.requireConfig(mcpConfigHint,
					"to serve with no config anyway (the defaults, tools from ./bin/tools): warden serve --allow-empty"); err != nil {
					return err
				}
			}
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			if execTrace != "" {
				stop, err := startTrace(execTrace)
				if err != nil {
					return err
				}
				defer stop()
			}
			ctx := cmd.Context()
			if token != "" {
				g.secrets = append(g.secrets, token)
			}
			a, logger, err := g.start(ctx)
			if err != nil {
				return err
			}
			defer a.Close(ctx)
			defer showLoads(a)()
			a.Catalog().WatchIdle(ctx)
			// Modules load in the background: the server answers initialize
			// and lists what is ready (naming the rest in tools/list's
			// _meta) while a slow module still compiles.
			a.Catalog().LoadToolsInBackground(ctx, func(err error) {
				logger.Error("tool not loaded", "error", err)
			})
			if err := a.WatchConfig(ctx); err != nil {
				logger.Warn("config changes will need a restart", "error", err)
			}
			if err := a.Catalog().WatchTools(ctx); err != nil {
				logger.Warn("tools dir changes will need a restart", "error", err)
			}
			cfg := a.Config()
			// Validated with the config; derived so that cursors and
			// requestStates are keyed apart.
			_, stateKey, err := cfg.Server.StateKeys()
			if err != nil {
				return fmt.Errorf("server.state_key: %w", err)
			}
			setMemoryLimit(uint64(cfg.Server.MaxInstanceMemory))
			obs, err := startObservability(ctx, cfg, a, logger)
			if err != nil {
				return err
			}
			// Flushed on the way out, after the server stopped calling.
			defer func() {
				if err := obs.close(ctx); err != nil {
					logger.Error("observability not flushed", "error", err)
				}
			}()
			startTasks(a, cfg, logger)
			opts := a.ServerOptions(mcpserver.Options{
				Name:                 "warden",
				Version:              version,
				Icons:                cfg.ServerIcons(),
				PageSize:             cfg.Server.PageSize,
				MaxInFlight:          cfg.Server.MaxInFlight,
				QueueWait:            cfg.Server.QueueWait,
				MaxInFlightPerClient: cfg.Server.MaxInFlightPerClient,
				MaxQueued:            cfg.Server.MaxQueued,
				MaxQueuedPerClient:   cfg.Server.MaxQueuedPerClient,
				ListWait:             cfg.Server.ListWait,
				MaxMessage:           int(cfg.Server.MaxMessage),
				Logger:               logger,
				StateKey:             stateKey,
			})
			if cmd.Flags().Changed("page-size") {
				opts.PageSize = pageSize
			}
			if cmd.Flags().Changed("max-in-flight") {
				opts.MaxInFlight = maxInFlight
			}
			if cmd.Flags().Changed("queue-wait") {
				opts.QueueWait = queueWait
			}
			if opts.PageSize < 1 || opts.MaxInFlight < 1 || opts.QueueWait < 0 {
				return usagef("--page-size and --max-in-flight must be at least 1, --queue-wait not negative")
			}
			obs.apply(&opts)
			srv := mcpserver.New(a, opts)
			defer srv.Close()
			if addr == "" {
				if cfg.Server.Metrics && cfg.Server.MetricsAddr == "" {
					logger.Warn("server.metrics serves /metrics on the --http address; over stdio set server.metrics_addr")
				}
				logger.Info("serving MCP over stdio", "tools", len(a.Catalog().Table().Tools()), "loading", len(a.Catalog().Loading()))
				return srv.ServeStdio(ctx)
			}
			if addr == useConfigAddr {
				addr = cfg.Server.HTTP
			}
			oauthCfg := cfg.Server.OAuth
			if token != "" && oauthCfg.Enabled() {
				return usagef("--token and server.oauth are both set: use one (server.oauth checks access tokens from an authorization server)")
			}
			if token == "" {
				token = cfg.Server.Token
			}
			var extra map[string]http.Handler
			if cfg.Server.Metrics && obs.metrics != nil {
				extra = map[string]http.Handler{"/metrics": obs.metrics.Handler()}
			}
			httpOpts := mcpserver.HTTPOptions{
				Extra:           extra,
				Token:           token,
				MaxRequestBytes: int64(cfg.Server.MaxMessage),
				HeaderTimeout:   cfg.Server.HeaderTimeout,
				BodyTimeout:     cfg.Server.BodyTimeout,
				IdleTimeout:     cfg.Server.IdleTimeout,
				MaxConnections:  cfg.Server.MaxConnections,
				Discovery:       discovery(cfg, token != "" || oauthCfg.Enabled()),
			}
			if cfg.Server.Console {
				c, err := serveConsole(cmd, a, logger, obs, addr)
				if err != nil {
					return err
				}
				defer c.Close()
				httpOpts.Console, httpOpts.ConsolePath = c.Handler(), c.Prefix()
			}
			if oauthCfg.Enabled() {
				if httpOpts.OAuth, err = oauthOptions(oauthCfg, cfg.RequireGroupsClaim(), logger); err != nil {
					return err
				}
			} else if len(cfg.Tools.Scopes) > 0 {
				logger.Warn("tools.scopes limits OAuth callers only, and server.oauth is not set: every client may call every tool")
			}
			err = srv.ListenAndServe(ctx, addr, httpOpts)
			if errors.Is(err, mcpserver.ErrTokenRequired) {
				return usagef("%v: pass --token, or set server.token or WARDEN_SERVER_TOKEN, or configure server.oauth (docs/auth.md)", err)
			}
			if err != nil {
				return fmt.Errorf("serve %s: %w", addr, err)
			}
			return nil
		},
	}
	cmd.Flags().Var((*addrValue)(&addr), "http",
		"serve streamable HTTP on `ADDR` (host:port) instead of stdio; --http alone: server.http from config (default 127.0.0.1:7331)")
	cmd.Flags().Lookup("http").NoOptDefVal = useConfigAddr
	cmd.Flags().IntVar(&pageSize, "page-size", 0, "tools per tools/list page (default: server.page_size)")
	cmd.Flags().IntVar(&maxInFlight, "max-in-flight", 0, "calls running at once across clients (default: server.max_in_flight)")
	cmd.Flags().DurationVar(&queueWait, "queue-wait", 0, "how long an extra call waits for a slot (default: server.queue_wait)")
	cmd.Flags().StringVar(&token, "token", "", "bearer token clients must send (default: server.token or WARDEN_SERVER_TOKEN; not with server.oauth)")
	cmd.Flags().BoolVar(&allowEmpty, "allow-empty", false, "serve even when no config is found (the defaults: tools from ./bin/tools)")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole serve to this file when it ends (go tool pprof; docs/performance.md)")
	cmd.Flags().StringVar(&execTrace, "trace", "", "write an execution trace of the whole serve to this file (go tool trace; docs/performance.md)")
	// Developer flags: documented in docs/performance.md, not in the help.
	_ = cmd.Flags().MarkHidden("cpuprofile")
	_ = cmd.Flags().MarkHidden("trace")
	return cmd
}

// discovery is the Server Card and AI Catalog server.discovery asks for
// (nil when off); auth says whether /mcp requires a bearer token.
func discovery(cfg *config.Config, auth bool) *mcpserver.Discovery {
	d := cfg.Server.Discovery
	if !d.Enabled {
		return nil
	}
	return &mcpserver.Discovery{Name: d.Name, Title: d.Title, Description: d.Description, Version: version,
		WebsiteURL: d.WebsiteURL, Icons: cfg.ServerIcons(), URL: cfg.DiscoveryURL(), Auth: auth}
}

// oauthOptions makes HTTP mode a resource server of the authorization
// servers server.oauth lists (read at start). Their keys are fetched in
// the background at once, so that the first client need not wait.
func oauthOptions(c config.OAuth, requireGroups bool, logger *slog.Logger) (*mcpserver.OAuthOptions, error) {
	opts := oauth.Options{
		Resource:      c.Resource,
		ClockSkew:     c.ClockSkew,
		RefreshMin:    c.JWKSRefreshMin,
		GroupsClaim:   c.GroupsClaim,
		RequireGroups: requireGroups,
		Logger:        logger,
	}
	var servers []string
	for _, is := range c.Issuers {
		opts.Issuers = append(opts.Issuers, oauth.Issuer{Issuer: is.Issuer, JWKSURL: is.JWKSURL})
		servers = append(servers, is.Issuer)
	}
	v, err := oauth.New(opts)
	if err != nil {
		return nil, fmt.Errorf("server.oauth: %w", err)
	}
	v.Prefetch()
	return &mcpserver.OAuthOptions{
		Resource:             c.Resource,
		AuthorizationServers: servers,
		Scopes:               c.Scopes,
		Verify:               v.VerifyPrincipal,
	}, nil
}

// startCPUProfile profiles the process into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// startTrace writes an execution trace (goroutines, scheduling, GC) of
// the process into path until stop is called.
func startTrace(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--trace: %w", err)
	}
	return func() {
		trace.Stop()
		f.Close()
	}, nil
}

// memoryHeadroom is what the Go heap may hold on top of the instance memory
// budget before the collector works harder: the server's own state, and
// garbage from instances the budget evicted.
const memoryHeadroom = 256 << 20

// setMemoryLimit gives the Go collector a soft limit of the instance memory
// budget plus memoryHeadroom, unless GOMEMLIMIT sets one. The budget bounds
// what instances hold; without a limit, an evicted instance's memory is
// garbage that the collector, pacing by the live heap, lets pile up to
// about twice the budget before it is reclaimed.
func setMemoryLimit(budget uint64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(int64(min(budget, 1<<40) + memoryHeadroom))
}

// addrValue is --http's value. A type of its own so that the help shows
// the optional value as --http ADDR[=server.http], not as a quoted string
// default that reads like an address.
type addrValue string

func (a *addrValue) String() string     { return string(*a) }
func (a *addrValue) Set(s string) error { *a = addrValue(s); return nil }
func (a *addrValue) Type() string       { return "addr" }
