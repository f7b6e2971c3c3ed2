package fs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/hostfuncs/internal/pathguard"
	"github.com/warden-run/warden/internal/userdirs"
	"github.com/warden-run/warden/tool"
)

// Config is the file capability's share of config.yaml.
type Config struct {
	// ProjectRoot is project.root; empty means the working directory.
	ProjectRoot string
	// Roots is project.roots: extra roots by name. A name is a letter
	// followed by up to 63 of A-Z a-z 0-9 _ -, and not "project". Relative
	// directories are taken from ProjectRoot.
	Roots map[string]string
	// Deny is security.deny: patterns added to the built-in deny-list.
	// "~/..." and "/..." patterns match host paths, patterns with a slash
	// match root-relative paths, others match any path component; "**"
	// crosses directories. Matching ignores case.
	Deny []string
	// Home is what "~" means in deny patterns; empty means the user's home
	// directory. Tests set it so that they never look at the real one.
	Home string
	// Limits bound every operation; zero fields take the defaults.
	Limits Limits
	// Own are warden's own files (config file, tools dir, compile cache,
	// audit log, ...): denied to every tool before any other rule, and
	// never offered by a permission prompt. Quote a path with Literal.
	Own []OwnFile
}

// OwnFile is one of warden's own files or directories (Config.Own).
type OwnFile = pathguard.OwnFile

// Literal quotes a host path as an OwnFile pattern that matches only it.
func Literal(path string) string { return pathguard.Literal(path) }

// Limits bound the work and the reply size of one request. A request may
// ask for less, never for more.
type Limits struct {
	MaxReadBytes     int64 // content returned by one read (default 1 MiB)
	MaxWriteBytes    int64 // content accepted by one write or append (default 8 MiB)
	MaxListEntries   int   // entries returned by one list (default 5000)
	MaxGlobMatches   int   // paths returned by one glob (default 1000)
	MaxWalkEntries   int   // entries one glob, search or recursive remove visits (default 50000)
	MaxSearchFiles   int   // files one search reads (default 5000)
	MaxSearchMatches int   // matches one search returns (default 500)
	MaxSearchBytes   int64 // bytes one search reads (default 64 MiB)
}

// DefaultLimits are the limits used for zero fields of Config.Limits.
var DefaultLimits = Limits{
	MaxReadBytes:     1 << 20,
	MaxWriteBytes:    8 << 20,
	MaxListEntries:   5000,
	MaxGlobMatches:   1000,
	MaxWalkEntries:   50000,
	MaxSearchFiles:   5000,
	MaxSearchMatches: 500,
	MaxSearchBytes:   64 << 20,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	pick := func(v, def int64) int64 {
		if v > 0 {
			return v
		}
		return def
	}
	pickInt := func(v, def int) int { return int(pick(int64(v), int64(def))) }
	return Limits{
		MaxReadBytes:     pick(l.MaxReadBytes, d.MaxReadBytes),
		MaxWriteBytes:    pick(l.MaxWriteBytes, d.MaxWriteBytes),
		MaxListEntries:   pickInt(l.MaxListEntries, d.MaxListEntries),
		MaxGlobMatches:   pickInt(l.MaxGlobMatches, d.MaxGlobMatches),
		MaxWalkEntries:   pickInt(l.MaxWalkEntries, d.MaxWalkEntries),
		MaxSearchFiles:   pickInt(l.MaxSearchFiles, d.MaxSearchFiles),
		MaxSearchMatches: pickInt(l.MaxSearchMatches, d.MaxSearchMatches),
		MaxSearchBytes:   pick(l.MaxSearchBytes, d.MaxSearchBytes),
	}
}

// FS is the warden.fs capability. It is safe for concurrent use, and its
// configuration can be replaced while calls are running.
type FS struct {
	state atomic.Pointer[state]
}

// state is one immutable configuration; a call uses the one it started with.
type state struct {
	guard  *pathguard.Guard
	limits Limits
}

var _ hostfuncs.Capability = (*FS)(nil)

// New returns the capability configured by cfg.
func New(cfg Config) (*FS, error) {
	c := &FS{}
	if err := c.SetConfig(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// SetConfig replaces the configuration; calls that start afterwards use it.
// On error the previous configuration stays in force.
func (c *FS) SetConfig(cfg Config) error {
	if cfg.ProjectRoot == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("fs config: project root: %w", err)
		}
		cfg.ProjectRoot = wd
	}
	if cfg.Home == "" {
		// Without a home directory the "~/" rules cannot be expanded; refuse
		// rather than run without them. A service started without $HOME
		// still has one in the user database (userdirs.Home).
		home, err := userdirs.Home()
		if err != nil {
			return fmt.Errorf("fs config: home directory for deny rules: %w", err)
		}
		cfg.Home = home
	}
	g, err := pathguard.New(pathguard.Config{
		ProjectDir: cfg.ProjectRoot,
		Roots:      cfg.Roots,
		Deny:       cfg.Deny,
		Home:       cfg.Home,
		Own:        cfg.Own,
	})
	if err != nil {
		return fmt.Errorf("fs config: %w", err)
	}
	c.state.Store(&state{guard: g, limits: cfg.Limits.withDefaults()})
	return nil
}

// Name implements hostfuncs.Capability.
func (c *FS) Name() string { return "fs" }

// ProjectRoot is the project root directory in force, as configured.
func (c *FS) ProjectRoot() string { return c.state.Load().guard.Roots()[0].Dir }

// CheckGrant judges p as a grant under key ("fs.read" or "fs.write") to
// toolName by the gate every call goes through: err is the denial a call
// under p would always get (the grant gives nothing), exists whether p
// names something now. Grant edits refuse on err and warn when !exists;
// listings show such a grant as not granted. See pathguard.Guard.CheckGrant.
func (c *FS) CheckGrant(key, toolName, p string) (exists bool, err error) {
	access := pathguard.Read
	if key == "fs.write" {
		access = pathguard.Write
	}
	return c.state.Load().guard.CheckGrant(access, toolName, p)
}

// CheckRead is the read gate for other capabilities (the LSP one): it
// returns nil when the calling tool may read path, else the error warden.fs
// would give for a read. path is in the guest form ("src/a.go",
// "notes:x.md") or absolute inside a root. It satisfies lsp.ReadGate.
func (c *FS) CheckRead(call *hostfuncs.Call, path string) error {
	_, err := c.ResolveRead(call, path)
	return err
}

// ResolveRead is CheckRead that also returns the path's real host path,
// for handing to a process that needs one (a language server).
func (c *FS) ResolveRead(call *hostfuncs.Call, path string) (string, error) {
	g := c.state.Load().guard
	t, err := g.Check("read", pathguard.Read, call.Tool, call.Grants.FS.Read, path)
	if err != nil {
		return "", err
	}
	return g.Resolve("read", pathguard.Read, call.Tool, call.Grants.FS.Read, t, true)
}

// Locate maps an absolute host path inside a root to the form guests use
// ("src/a.go", "notes:x.md"). It does not check grants: pass the result to
// CheckRead before revealing it.
func (c *FS) Locate(abs string) (string, bool) {
	t, ok := c.state.Load().guard.Locate(abs)
	if !ok {
		return "", false
	}
	return t.Path(), true
}

// request is the union of every operation's fields; doc.go lists which
// operation reads which.
type request struct {
	Op         string `json:"op"`
	Path       string `json:"path"`
	Offset     *int64 `json:"offset"`
	Limit      int    `json:"limit"`
	MaxBytes   int64  `json:"maxBytes"`
	Pattern    string `json:"pattern"`
	Glob       string `json:"glob"`
	IgnoreCase bool   `json:"ignoreCase"`
	MaxFiles   int    `json:"maxFiles"`
	MaxMatches int    `json:"maxMatches"`
	Content    string `json:"content"`
	Encoding   string `json:"encoding"`
	Recursive  bool   `json:"recursive"`
}

// Serve implements hostfuncs.Capability.
func (c *FS) Serve(ctx context.Context, call *hostfuncs.Call, raw []byte) (any, error) {
	var req request
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, tool.Errorf(tool.KindInvalidArguments, "fs request: %v", err)
	}
	if dec.More() {
		return nil, tool.Errorf(tool.KindInvalidArguments, "fs request: trailing data after the JSON value")
	}
	op := &opCall{ctx: ctx, call: call, st: c.state.Load(), req: &req}
	switch req.Op {
	case "read":
		return op.read()
	case "list":
		return op.list()
	case "stat":
		return op.stat()
	case "glob":
		return op.glob()
	case "search":
		return op.search()
	case "write":
		return op.write(false)
	case "append":
		return op.write(true)
	case "mkdir":
		return op.mkdir()
	case "remove":
		return op.remove()
	}
	return nil, tool.Errorf(tool.KindInvalidArguments,
		"fs request: unknown op %q; one of read, list, stat, glob, search, write, append, mkdir, remove", req.Op)
}

// opCall is one request being served.
type opCall struct {
	ctx  context.Context
	call *hostfuncs.Call
	st   *state
	req  *request
}

func (o *opCall) grants(a pathguard.Access) []string {
	if a == pathguard.Write {
		return o.call.Grants.FS.Write
	}
	return o.call.Grants.FS.Read
}

// gate runs both halves of the path gate and opens the target's root. The
// caller closes the root.
func (o *opCall) gate(op string, a pathguard.Access, p string, followLast bool) (pathguard.Target, *os.Root, error) {
	g := o.st.guard
	t, err := g.Check(op, a, o.call.Tool, o.grants(a), p)
	if err != nil {
		return t, nil, o.offerable(op, a, p, followLast, err)
	}
	if _, err := g.Resolve(op, a, o.call.Tool, o.grants(a), t, followLast); err != nil {
		return t, nil, err
	}
	root, err := os.OpenRoot(t.Root.Real)
	if err != nil {
		return t, nil, tool.Errorf(tool.KindFailed, "%s %q: root %q is not available: %v", op, t.Path(), t.Root.Name, unwrapPath(err))
	}
	return t, root, nil
}

// offerable keeps the grant a denial names (tool.Error.Need, what a
// permission prompt may offer the person) only when that grant would let
// the request through every gate: a path whose symlinks lead out of its
// root or into a denied file is refused whatever config grants, so it is
// never offered.
func (o *opCall) offerable(op string, a pathguard.Access, p string, followLast bool, err error) error {
	te, ok := err.(*tool.Error)
	if !ok || te.Need == nil {
		return err
	}
	g := o.st.guard
	widened := append(slices.Clip(o.grants(a)), te.Need.Value)
	t, checkErr := g.Check(op, a, o.call.Tool, widened, p)
	if checkErr == nil {
		_, checkErr = g.Resolve(op, a, o.call.Tool, widened, t, followLast)
	}
	if checkErr != nil && !isNotExist(checkErr) {
		plain := *te
		plain.Need = nil
		return &plain
	}
	return err
}

// isNotExist reports a resolve failure for want of the file: the grant
// would still allow creating or reading it once it exists.
func isNotExist(err error) bool {
	te, ok := err.(*tool.Error)
	return ok && te.Kind == tool.KindFailed
}

// verifyOpened runs the real-path half of the gate again on what f
// actually is, where the platform can tell (/proc/self/fd on Linux). That
// closes the window in which another process swaps a checked component for
// a symlink between Resolve and the open. It must run after the file type
// is known to be regular or a directory (Fd makes a FIFO blocking).
func (o *opCall) verifyOpened(op string, a pathguard.Access, t pathguard.Target, f *os.File) error {
	opened, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return nil // no /proc: the check before the open stands alone
	}
	if opened == t.HostPath() {
		return nil // no symlink on the way: the lexical check judged this path
	}
	if strings.HasSuffix(opened, " (deleted)") {
		return tool.Errorf(tool.KindFailed, "%s %q: removed while being opened", op, t.Path())
	}
	return o.st.guard.CheckReal(op, a, o.call.Tool, o.grants(a), t, opened)
}

// fileError maps an error from an os.Root operation to a tool error that
// names the guest's path, never a host path.
func fileError(op string, t pathguard.Target, err error) error {
	if err == nil {
		return nil
	}
	inner := unwrapPath(err)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return tool.Errorf(tool.KindNotFound, "%s %q: no such file or directory", op, t.Path())
	case errors.Is(err, syscall.ENOTDIR):
		return tool.Errorf(tool.KindNotFound, "%s %q: a parent is not a directory", op, t.Path())
	case strings.Contains(inner.Error(), "path escapes from parent"):
		return tool.Errorf(tool.KindDenied, "%s %q: resolves outside root %q; symlinks may not leave their root nor be absolute", op, t.Path(), t.Root.Name)
	case errors.Is(err, iofs.ErrPermission):
		return tool.Errorf(tool.KindFailed, "%s %q: the operating system denied access", op, t.Path())
	}
	return tool.Errorf(tool.KindFailed, "%s %q: %v", op, t.Path(), inner)
}

// unwrapPath drops the host path that *PathError and *LinkError carry.
func unwrapPath(err error) error {
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// cancelled reports a cancelled call as the kind the runtime expects.
func (o *opCall) cancelled() error {
	if err := o.ctx.Err(); err != nil {
		return tool.Errorf(tool.KindCancelled, "fs %s: %v", o.req.Op, err)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return tool.Errorf(tool.KindInvalidArguments, format, args...)
}

// lower returns the smaller positive of asked and limit.
func lower[T int | int64](asked, limit T) T {
	if asked > 0 && asked < limit {
		return asked
	}
	return limit
}
