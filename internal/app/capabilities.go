package app

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/hostfuncs/client"
	"github.com/warden-run/warden/hostfuncs/env"
	"github.com/warden-run/warden/hostfuncs/fs"
	"github.com/warden-run/warden/hostfuncs/lsp"
	"github.com/warden-run/warden/hostfuncs/memory"
	"github.com/warden-run/warden/hostfuncs/net"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/grantcmd"
	"github.com/warden-run/warden/internal/policy"
	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// capabilities are the host capabilities, built once from config and
// reconfigured in place when the config changes, so that a module loaded
// earlier sees the new settings from its next call on.
type capabilities struct {
	fs     *fs.FS
	memory *memory.Memory
	net    *net.Net
	env    *env.Env
	lsp    *lsp.Capability
	client *client.Capabilities
	// prompts puts denied, requested capabilities to the person.
	prompts *prompter
	// servers runs the language servers behind lsp; Close stops them.
	servers *lsp.Manager
	// rec hears of every request and its decision (observe.go).
	rec *recorderRef
	// fsMu orders the fs capability's reconfigurations (apply, refreshOwn),
	// so that an older config's never lands after a newer one's.
	fsMu sync.Mutex
	// startOwn are warden's own files as configured at start: the tools
	// dir, compile cache and audit log are read only then, so they stay
	// warden's (and denied to tools) whatever a reload says.
	startOwn []fs.OwnFile
	// learn hears each secret value a tool is given, for the logs to
	// redact (redact.Secrets.Learn).
	learn func(string)
}

func newCapabilities(ctx context.Context, cfg *config.Config, logger *slog.Logger, learn func(string)) (_ *capabilities, err error) {
	c := capabilities{learn: learn}
	c.client = client.New(cfg.ClientWait())
	c.rec = &recorderRef{}
	c.prompts = &prompter{log: logger, rec: c.rec, digests: newConfigDigests(cfg)}
	c.startOwn = ownFiles(cfg)
	if c.fs, err = fs.New(c.fsConfig(cfg)); err != nil {
		return nil, fmt.Errorf("fs capability: %w", err)
	}
	// On PostgreSQL, this connects and migrates the schema.
	if c.memory, err = memory.NewContext(ctx, memoryConfig(cfg), logger); err != nil {
		return nil, fmt.Errorf("memory capability: %w", err)
	}
	defer func() {
		if err != nil {
			c.memory.Close()
		}
	}()
	if c.net, err = net.New(netConfig(cfg), logger); err != nil {
		return nil, fmt.Errorf("net capability: %w", err)
	}
	if c.env, err = env.New(c.envConfig(cfg), logger); err != nil {
		return nil, fmt.Errorf("env capability: %w", err)
	}
	if c.servers, err = lsp.NewManager(lspConfig(cfg, logger)); err != nil {
		return nil, fmt.Errorf("lsp capability: %w", err)
	}
	// Every path a tool asks the language servers about, and every location
	// they answer with, passes the fs read gate.
	if c.lsp, err = lsp.NewCapability(c.servers, c.fs.ProjectRoot, c.fs); err != nil {
		c.servers.Close(context.Background())
		return nil, fmt.Errorf("lsp capability: %w", err)
	}
	return &c, nil
}

func (c *capabilities) list() []hostfuncs.Capability {
	list := []hostfuncs.Capability{noteFS{noting{c.fs, c.prompts, c.rec}, c.fs}, noting{c.memory, c.prompts, c.rec}, noting{c.net, c.prompts, c.rec},
		noting{c.env, c.prompts, c.rec}, noting{c.lsp, c.prompts, c.rec}}
	for _, cc := range c.client.List() {
		list = append(list, noting{cc, nil, c.rec})
	}
	return list
}

// grantNoteKey marks a call whose tool has a grant entry bound to another
// module than the one serving it (see App.Call).
type grantNoteKey struct{}

func withGrantNote(ctx context.Context, note string) context.Context {
	return context.WithValue(ctx, grantNoteKey{}, note)
}

// grantNote is what a denial of a capability to the tool whose policy is
// tp, served by module, adds so that it points at the config line to fix:
// why the tool's grant entry gives it nothing (elsewhere, from
// policy.ToolPolicy.Grants), or, when
// config has no entry and the module is not named like the tool (a module
// serving several tools, such as lsp), that a new entry must name the
// module: an entry without a module field would belong to the module named
// like the tool and still grant nothing. "" when there is nothing to add.
func grantNote(tp policy.ToolPolicy, module string, elsewhere error) string {
	if elsewhere != nil {
		return elsewhere.Error()
	}
	key, toolName := tp.Key, tp.Name
	if tp.HasGrant || module == key {
		return ""
	}
	return fmt.Sprintf("config has no tools.grants.%s; tool %q is served by module %s, so that entry needs module: %s "+
		"(warden grant %s --module %s ...)", key, toolName, module, module, key, module)
}

// noting serves a capability and, when a call is denied while its tool's
// grant entry belongs to another module, adds why to the denial: the
// capability's own message names the grant key, which exists, so without
// the note a person would look for the mistake in the wrong place.
type noting struct {
	hostfuncs.Capability
	prompts *prompter // nil: never prompts
	// rec is the one observation point of every capability: each request
	// is recorded once, with its final decision (after any prompt).
	rec *recorderRef
}

func (n noting) Serve(ctx context.Context, call *hostfuncs.Call, request []byte) (any, error) {
	rec := n.rec.get()
	if rec == nil {
		return n.serve(ctx, call, request)
	}
	start := time.Now()
	result, err := n.serve(ctx, call, request)
	rec.CapabilityUse(ctx, useOf(n.Name(), call, request, err, start))
	return result, err
}

func (n noting) serve(ctx context.Context, call *hostfuncs.Call, request []byte) (any, error) {
	result, err := n.Capability.Serve(ctx, call, request)
	if err != nil && n.prompts != nil {
		result, err = n.prompts.retry(ctx, call, func() (any, error) { return n.Capability.Serve(ctx, call, request) }, result, err)
	}
	if err == nil {
		return result, nil
	}
	note, _ := ctx.Value(grantNoteKey{}).(string)
	var te *tool.Error
	if !errors.As(err, &te) || te.Kind != tool.KindDenied {
		return result, err
	}
	noted := *te
	switch {
	case note != "":
		noted.Message = te.Message + "; " + note
	case te.Need != nil:
		// The command beside the key: the entry (or the default binding)
		// belongs to the module serving the call, so plain `warden grant`
		// adds to it.
		need := *te.Need
		if need.Key == "fs.read" || need.Key == "fs.write" {
			need.Value = fs.SuggestGrant(need.Value) // the value the key names
		}
		cmd := grantcmd.ForNeed(configkey.Fold(call.Tool), "", need)
		if cmd == "" {
			return result, err
		}
		noted.Message = te.Message + " (" + cmd + ")"
	default:
		return result, err
	}
	return result, &noted
}

// noteFS is noting for fs, keeping the Locate method the Extism loader
// uses to map plugins' absolute paths.
type noteFS struct {
	noting
	fs *fs.FS
}

func (n noteFS) Locate(abs string) (string, bool) { return n.fs.Locate(abs) }

// close stops the language servers: shutdown, exit, then kill after a grace
// period, so that none outlives warden.
func (c *capabilities) close(ctx context.Context) error {
	defer c.memory.Close()
	return c.servers.Close(ctx)
}

// apply reconfigures every capability; all of them are tried, and every
// refusal reported.
func (c *capabilities) apply(cfg *config.Config) error {
	c.client.Reconfigure(cfg.ClientWait())
	c.fsMu.Lock()
	defer c.fsMu.Unlock()
	return errors.Join(
		wrap("fs", c.fs.SetConfig(c.fsConfig(cfg))),
		wrap("memory", c.memory.SetConfig(memoryConfig(cfg))),
		wrap("net", c.net.SetConfig(netConfig(cfg))),
		wrap("env", c.env.SetConfig(c.envConfig(cfg))),
	)
}

func wrap(what string, err error) error {
	if err != nil {
		return fmt.Errorf("%s capability: %w", what, err)
	}
	return nil
}

// refreshOwn recomputes warden's own files under current (the config in
// force, read under the lock): the tools dir changed, and a module file
// that is a symlink makes its target warden's own.
func (c *capabilities) refreshOwn(current func() *config.Config) error {
	c.fsMu.Lock()
	defer c.fsMu.Unlock()
	return c.fs.SetConfig(c.fsConfig(current()))
}

// fsConfig is the fs capability's config under cfg: its own files are
// those cfg names and those in force since start (startOwn).
func (c *capabilities) fsConfig(cfg *config.Config) fs.Config {
	return fs.Config{ProjectRoot: cfg.Project.Root, Roots: cfg.Project.Roots, Deny: cfg.Security.Deny,
		Own: append(slices.Clip(c.startOwn), ownFiles(cfg)...)}
}

// ownFiles are warden's own files under cfg, denied to every tool's fs
// access whatever it is granted (RATIONALE.md, "Warden's own files"): a
// tool that could write them could rewrite its own grants (the config file,
// hot-reloaded), run code of its choosing (the tools dir, hot-loaded; the
// compile cache, whose code runs as trusted), erase its traces (the audit
// log) or break the memory store's locking; one that could read the config
// would read server.token, server.state_key and the database URL. Paths
// are absolute (config resolves them); pathguard also denies the real path
// behind symlinks.
func ownFiles(cfg *config.Config) []fs.OwnFile {
	var own []fs.OwnFile
	add := func(what, path, suffix string) {
		if path != "" {
			own = append(own, fs.OwnFile{Pattern: fs.Literal(filepath.Clean(path)) + suffix, What: what})
		}
	}
	if cfg.File == "" {
		// No config file: ./config.yaml is the one the next start reads.
		add("config file (read at the next start)", filepath.Join(cfg.Dir, "config.yaml"), "")
	} else {
		add("config file", cfg.File, "")
		// config.EditFile's temp file, renamed over the config when saved.
		add("config file (an edit being saved)", filepath.Dir(cfg.File), "/.warden-edit-*.tmp")
	}
	add("tools dir", cfg.Tools.Dir, "")
	// A module linked into the tools dir is loaded from the link's target:
	// the link's path as a rule also denies its target (pathguard denies
	// the real path of an own file too).
	if paths, err := runtime.ModuleFiles(cfg.Tools.Dir); err == nil {
		for _, p := range paths {
			if fi, err := os.Lstat(p); err == nil && fi.Mode()&iofs.ModeSymlink != 0 {
				add("module file (linked into the tools dir)", p, "")
			}
		}
	}
	if dir := cfg.Tools.CacheDir; dir != "off" {
		add("compile cache dir", dir, "")
	}
	// The default compile cache, and the signature trust metadata (TUF)
	// cached beside it, whatever tools.cache_dir says.
	if dir, err := runtime.DefaultCacheDir(); err == nil {
		add("cache dir (compiled code, signature trust metadata)", dir, "")
	}
	if cfg.Log.Audit != "" {
		add("audit log", cfg.Log.Audit, "")
		add("audit log (a rotated file)", cfg.Log.Audit, ".*")
	}
	add("signature trust root (security.trusted_root)", cfg.Security.TrustedRoot, "")
	add("signature trust root (security.tuf_root)", cfg.Security.TUFRoot, "")
	for _, pattern := range slices.Sorted(maps.Keys(cfg.Security.Signatures)) {
		add("signature key (security.signatures)", cfg.Security.Signatures[pattern].Key, "")
	}
	add("memory store lock file", memory.LockPath(cfg.Project.Root), "")
	// Every client's task records and results (MCP tasks): a tool that
	// read them would read other principals' results, one that wrote them
	// could forge a result or end another's task.
	add("task store", tasks.DefaultDir(cfg.Project.Root), "")
	return own
}

func memoryConfig(cfg *config.Config) memory.Config {
	return memory.Config{ProjectRoot: cfg.Project.Root, MaxValueBytes: int(cfg.Memory.MaxValue), Deny: cfg.Security.Deny,
		Backend: cfg.Memory.Backend, MaxConns: cfg.Memory.Postgres.MaxConns, QueryTimeout: cfg.Memory.Postgres.QueryTimeout}
}

func netConfig(cfg *config.Config) net.Config {
	return net.Config{MaxResponseBytes: int64(cfg.Net.MaxResponse), Timeout: cfg.Net.Timeout}
}

func lspConfig(cfg *config.Config, logger *slog.Logger) lsp.Config {
	languages := make(map[string]lsp.Language, len(cfg.LSP.Languages))
	for name, l := range cfg.LSP.Languages {
		languages[name] = lsp.Language{Command: l.Command, Args: l.Args, Extensions: l.Extensions}
	}
	return lsp.Config{Languages: languages, IdleTimeout: cfg.LSP.IdleTTL, RequestTimeout: cfg.LSP.Timeout, Logger: logger}
}

func (c *capabilities) envConfig(cfg *config.Config) env.Config {
	values := make(map[string]env.Value, len(cfg.Env.Values))
	for key, v := range cfg.Env.Values {
		values[key] = env.Value{Value: v.Value, FromEnv: v.FromEnv}
	}
	// The secrets come with each call, resolved by its tool's policy;
	// each get checks them against the policy in force too, so that a
	// reload revokes a binding at once, even mid-call.
	return env.Config{Values: values, Read: c.learn, Secrets: c.liveSecrets}
}

// liveSecrets is env.Config.Secrets: the secrets of the tool called name
// as the policy in force resolves them. Before the app wires its policy in,
// none: a get then reads no secret (fails closed).
func (c *capabilities) liveSecrets(name string) map[string]hostfuncs.Secret {
	if c.prompts.policy == nil {
		return nil
	}
	return c.prompts.policy().Secrets(name)
}
