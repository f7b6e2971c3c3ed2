// Package app wires warden together; it is composition, not a place for
// new responsibilities. An App holds the live config with the policy
// resolved from it (internal/policy, swapped together on every reload), the
// sandbox runtime, the host capabilities, the catalog that loads and lists
// modules and decides who serves a name (internal/catalog), and the
// installer that brings modules onto disk (internal/install). Its own code
// is the request path every call and feature takes (door.go: one lookup of
// the tool's policy, then gates, grants and the call) and the hooks the MCP
// server is given (ServerOptions). cmd/warden is a thin command-line shell
// over it, and mcpserver serves it.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/hostfuncs/lsp"
	"github.com/warden-run/warden/internal/catalog"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/install"
	"github.com/warden-run/warden/internal/policy"
	"github.com/warden-run/warden/internal/ratestore"
	"github.com/warden-run/warden/internal/redact"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// App is a running warden: config, runtime and loaded tools.
type App struct {
	live *config.Live
	// resolved is the config in force with its policy, swapped together
	// on every reload (policy.go).
	resolved inForce
	caps     *capabilities
	rt       *runtime.Runtime
	log      *slog.Logger
	cursors  *cursorSigner
	// catalog loads the tools dir and decides what is served (its Table).
	catalog *catalog.Catalog
	// callLimits caches each tool's CallLimits (by name, *callLimitsOf).
	callLimits sync.Map

	mu          sync.Mutex
	subscribers map[int]func()
	nextSub     int
	// exposure is tools.expose, tools.hide and tools.tasks as last
	// applied, to tell clients when the list they see changed.
	exposure string
	// res serves resources and prompts (resources.go).
	res resourceState
	// installer reviews, fetches, installs, syncs and updates modules
	// (Installer).
	installer *install.Installer
	// secrets, when set (RedactWith), is kept equal to the config's
	// secret values, which the logs and the audit trail redact.
	// secrets learns the secret values read at call time too (see
	// capabilities.learn); it is shared with them, hence a pointer.
	secrets *atomic.Pointer[redact.Secrets]
	// taskRunner runs MCP tasks once StartTasks was called (tasks.go).
	taskRunner *taskRunner
	// secretsExtra are RedactWith's extra values, written before secrets
	// is stored and only read after it is loaded.
	secretsExtra []string
	// rates are the shared rate-limit buckets on PostgreSQL (ratestore.go;
	// nil until the server asks, and on the file backend). Guarded by mu.
	rates *ratestore.Store
	// approvals holds the questions a client cannot show, for the console
	// (approvals.go).
	approvals *approvalsState
}

// New starts a runtime for cfg. It loads no tools: call the catalog's
// LoadTools.
func New(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*App, error) {
	cursorKey, _, err := cfg.Server.StateKeys()
	if err != nil {
		return nil, fmt.Errorf("server.state_key: %w", err)
	}
	secrets := new(atomic.Pointer[redact.Secrets])
	caps, err := newCapabilities(ctx, cfg, logger, func(v string) { secrets.Load().Learn(v) })
	if err != nil {
		return nil, err
	}
	questions, err := newApprovals(ctx, cfg, caps.rec, logger)
	if err != nil {
		caps.close(ctx)
		return nil, err
	}
	rt, err := runtime.New(ctx, runtime.Options{CacheDir: cfg.Tools.CacheDir, CacheMax: uint64(cfg.Tools.CacheMax), Capabilities: caps.list(), Logger: logger,
		MaxInstanceMemory: uint64(cfg.Server.MaxInstanceMemory), Tiered: cfg.Tools.Tiering != "off"})
	if err != nil {
		return nil, err
	}
	a := &App{
		caps:        caps,
		secrets:     secrets,
		rt:          rt,
		log:         logger,
		cursors:     newCursorSigner(cursorKey),
		subscribers: make(map[int]func()),
		approvals:   questions,
	}
	config.WarnDeprecated(logger, cfg, nil)
	a.live = config.NewLive(cfg, logger, a.configChanged)
	questions.followConfig(a.Config)
	caps.prompts.approvals = questions
	a.resolved.resolve(a.live.Current)
	a.catalog = catalog.New(catalog.Options{
		Runtime: rt,
		Policy:  a.Policy,
		Logger:  logger,
		Changed: a.notify,
		// A module file that is now a symlink makes its target warden's
		// own before the module can serve.
		BeforeReload: func() error { return a.caps.refreshOwn(a.Config) },
	})
	a.installer = install.New(install.Options{Config: a.Config, Reload: a.live.Reload, Runtime: rt, Catalog: a.catalog.Table()})
	caps.prompts.policy, caps.prompts.reload = a.Policy, a.live.Reload
	caps.prompts.sumOf = a.moduleSHA256
	a.watchMemory()
	return a, nil
}

// WatchConfig applies every valid change of the config file from the next
// call on, until ctx ends.
func (a *App) WatchConfig(ctx context.Context) error { return a.live.Watch(ctx) }

// configChanged puts a reloaded config in force with its policy, then
// reconfigures the capabilities for it. Grants and per-call limits need
// nothing more: calls read them from the policy in force.
func (a *App) configChanged(cfg *config.Config) {
	a.resolved.resolve(a.live.Current)
	a.refreshSecrets(cfg)
	if err := a.caps.apply(cfg); err != nil {
		a.log.Error("config change not fully applied to the capabilities", "error", err)
	}
	// Pins decide collisions anew; the files that failed are tried again.
	changed := a.catalog.ConfigChanged(cfg)
	// tools.expose and tools.hide change the list clients see, and
	// tools.tasks the execution.taskSupport it shows.
	a.mu.Lock()
	exposure := strings.Join(cfg.Tools.Expose, "\x00") + "\x01" + strings.Join(cfg.Tools.Hide, "\x00") + "\x01" + fmt.Sprint(cfg.Tools.Tasks)
	if exposure != a.exposure {
		a.exposure = exposure
		changed = true
	}
	a.mu.Unlock()
	if changed {
		a.notify()
	}
}

// Close stops every module, the runtime and the language servers.
func (a *App) Close(ctx context.Context) error {
	a.catalog.Close(ctx)
	if a.res.stop != nil {
		a.res.stop()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	a.mu.Lock()
	if a.rates != nil {
		a.rates.Close()
	}
	a.mu.Unlock()
	if a.approvals.close != nil {
		a.approvals.close()
	}
	var tasksErr error
	if a.taskRunner != nil {
		tasksErr = a.taskRunner.close(ctx)
	}
	return errors.Join(tasksErr, a.caps.close(ctx), a.rt.Close(ctx))
}

// Runtime returns the sandbox runtime, for commands that load a module
// outside the tools dir (inspect, install).
func (a *App) Runtime() *runtime.Runtime { return a.rt }

// Catalog returns the modules of the tools dir: loading them, listing
// their tools, pins and name collisions.
func (a *App) Catalog() *catalog.Catalog { return a.catalog }

// LanguageServers is the manager of the language servers behind the lsp
// capability: `warden tools` asks it which servers are installed.
func (a *App) LanguageServers() *lsp.Manager { return a.caps.servers }

// Config returns the config in force.
func (a *App) Config() *config.Config { return a.Policy().Config() }

// call is Call without the observation (observe.go): the tool runs with
// the policy admit resolves from the config in force right now.
func (a *App) call(ctx context.Context, c mcpserver.Call) (*tool.Result, error) {
	t, ok := a.catalog.Table().Tool(c.Name)
	if !ok {
		var reasons []string
		for _, r := range a.catalog.Table().RefusedAs(c.Name) {
			if r.Tool == c.Name {
				reasons = append(reasons, r.Reason)
			}
		}
		if len(reasons) > 0 {
			return nil, tool.Errorf(tool.KindNotFound, "no tool named %q is served: %s", c.Name, strings.Join(reasons, "; "))
		}
		return nil, tool.Errorf(tool.KindNotFound, "no tool named %q", c.Name)
	}
	ctx, req, answer, err := a.admit(ctx, entrance{
		method: mcpserver.MethodCallTool, what: "tool " + c.Name, subject: c.Name, tool: t, module: t.Module(), call: c,
		notServed: func() error {
			// Hidden tools are not called either: a client that learnt the
			// name elsewhere gets what a client asking for an unknown name gets.
			return tool.Errorf(tool.KindNotFound, "no tool named %q is served to clients (tools.expose / tools.hide)", c.Name)
		},
	})
	if err != nil {
		return nil, err
	}
	if answer != nil {
		return answer, nil
	}
	cursor := ""
	if c.Cursor != "" {
		var err error
		if cursor, err = a.cursors.open(c.Name, c.Cursor); err != nil {
			return tool.ErrorResult(tool.Errorf(tool.KindInvalidArguments, "%v", err)), nil
		}
	}
	ctx, notes := withNotices(ctx)
	ctx = withCallArguments(ctx, c.Arguments)
	req.Arguments, req.Cursor = c.Arguments, cursor
	res := t.Call(ctx, req)
	// Error results too: a failing call's content blocks reach the client.
	if bad := a.foreignEmbedded(t.Module(), "content", resultBlocks(res)); bad != nil {
		res = tool.ErrorResult(bad)
	}
	if res.NextCursor != "" {
		res.NextCursor = a.cursors.seal(c.Name, res.NextCursor)
	}
	notes.attach(res)
	return res, nil
}

// toolCallLimits is mcpserver.Options.CallLimits: a tool's calls run at most
// one per instance of its module (tools.limits.<module>.max_instances),
// and at most tools.limits.<tool>.max_in_flight; its deadline, which
// covers its wait for a slot, is the one its call gets.
func (a *App) toolCallLimits(name string) mcpserver.CallLimits {
	t, ok := a.catalog.Table().Tool(name)
	if !ok {
		return mcpserver.CallLimits{}
	}
	// Asked on every call's path: built once per tool and policy (a
	// reloaded module is a new Tool, a reloaded config a new Policy).
	pol := a.Policy()
	if c, ok := a.callLimits.Load(name); ok {
		if c := c.(*callLimitsOf); c.policy == pol && c.tool == t {
			return c.limits
		}
	}
	l := callLimitsFor(pol.Tool(name), t)
	a.callLimits.Store(name, &callLimitsOf{policy: pol, tool: t, limits: l})
	return l
}

// callLimitsOf is CallLimits's answer for one tool under one policy.
type callLimitsOf struct {
	policy *policy.Policy
	tool   *runtime.Tool
	limits mcpserver.CallLimits
}

// callLimitsFor derives the limits of the tool t from its policy tp.
func callLimitsFor(tp policy.ToolPolicy, t *runtime.Tool) mcpserver.CallLimits {
	l := moduleLimits(t.Module())
	l.Timeout = t.Timeout()
	if d := tp.Timeout; d > 0 && d < l.Timeout {
		l.Timeout = d
	}
	l.MaxInFlight = tp.MaxInFlight
	l.InFlightSetting = "tools.limits." + tp.Key + ".max_in_flight"
	l.Rate = tp.Rate
	return l
}

// moduleLimits are the limits of m's instances, which every run of its
// code shares: its tools' calls and its features'. No Timeout: a feature
// that runs as no tool waits for a slot as long as server.queue_wait
// allows (the module's deadline, which counts that wait, bounds its run).
func moduleLimits(m *runtime.Module) mcpserver.CallLimits {
	instances := m.Limits().MaxInstances
	if instances <= 0 {
		instances = runtime.DefaultMaxInstances
	}
	module := configkey.Fold(m.Name())
	return mcpserver.CallLimits{
		Module:           m.Name(),
		MaxInstances:     instances,
		InstancesSetting: "tools.limits." + module + ".max_instances",
		// The runtime gives a session its own instance and runs its calls
		// there one at a time: the second waits in the queue, not on a slot.
		OneCallPerSession: m.Limits().Isolation == runtime.IsolationSession,
		IsolationSetting:  "tools.limits." + module + ".isolation",
	}
}

// ownerLimits is mcpserver.Options.OwnerLimits: a feature that runs as no
// tool runs on an instance of its module, and waits for one of the
// module's slots as its tools' calls do. The memory resources (no module)
// have none.
func (a *App) ownerLimits(owner string) mcpserver.CallLimits {
	m, err := a.module(owner)
	if err != nil {
		return mcpserver.CallLimits{}
	}
	return moduleLimits(m)
}

// serverRateLimits returns server.rate_limit as the config in force sets
// it, for mcpserver.Options.RateLimit: asked at every call, it is resolved
// once per config load (internal/policy).
func (a *App) serverRateLimits() mcpserver.RateLimits { return a.Policy().ServerRateLimits() }

// Subscribe implements mcpserver.Tools.
func (a *App) Subscribe(f func()) (cancel func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id := a.nextSub
	a.nextSub++
	a.subscribers[id] = f
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		delete(a.subscribers, id)
	}
}

func (a *App) notify() {
	a.mu.Lock()
	subs := make([]func(), 0, len(a.subscribers))
	for _, f := range a.subscribers {
		subs = append(subs, f)
	}
	a.mu.Unlock()
	for _, f := range subs {
		f()
	}
}

// stats reports resource use for /healthz: the instance memory budget;
// lspServers, each running language server's language, pid, resident
// memory (its process group's, on Linux) and uptime; and config_error, why
// config.yaml as last edited is not in force (the reload's refusal,
// config.yaml:3: …), while it is not.
func (a *App) stats() map[string]any {
	servers := []map[string]any{}
	for _, s := range a.caps.servers.Servers() {
		servers = append(servers, map[string]any{"language": s.Language, "pid": s.PID, "memoryBytes": s.Memory,
			"uptimeSeconds": int64(time.Since(s.Started).Seconds())})
	}
	stats := map[string]any{"instanceMemory": a.rt.InstanceMemory(), "lspServers": servers}
	if why := a.live.Refused(); why != "" {
		stats["config_error"] = why
	}
	return stats
}

// endSession releases what a client session kept (IsolationSession).
func (a *App) endSession(ctx context.Context, session string) {
	a.catalog.Table().EndSession(ctx, session)
}
