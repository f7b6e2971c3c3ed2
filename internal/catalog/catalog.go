// Package catalog keeps the modules of a tools directory and decides which
// tools they serve: it owns loading, listing, pins and name collisions.
//
// A [Catalog] loads every module file of the tools dir (tools.dir) at start,
// in the foreground ([Catalog.LoadTools]) or in the background
// ([Catalog.LoadToolsInBackground], listing each module as soon as it is in),
// reloads a file when it changes ([Catalog.WatchTools]), retries the files
// that failed when the config changes ([Catalog.ConfigChanged]), and releases
// the code of modules left idle ([Catalog.WatchIdle]). A module listed from
// its cached descriptor manifest compiles on its first call.
//
// Which module serves a tool name is the [Table]'s decision, a pure function
// of the loaded modules and their pins (tools.pins): a pinned module wins a
// collision, otherwise every candidate is refused, and the order modules
// load in plays no part. While the start's load runs, [Catalog.HeldBy] holds
// back a tool that a module still loading may beat, so that a quick
// impostor never answers for a reviewed tool.
//
// A file that fails to load is kept with its error ([Catalog.LoadErrors])
// and tried again at the next config change. Every error names its file;
// LoadTools returns them in tools dir order (the order of the files'
// names), whatever order the files finished loading in.
//
// The catalog knows nothing of MCP or of the app around it: what it needs
// (the runtime, the policy in force, a logger, a hook for list changes) it
// gets in [Options].
package catalog

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/policy"
	"github.com/warden-run/warden/runtime"
)

// Options are what a Catalog depends on.
type Options struct {
	// Runtime loads the module files.
	Runtime *runtime.Runtime
	// Policy returns the policy in force, resolved from the config in
	// force (which it holds: tools.dir, pins, defaults): each tool's
	// exposure and grant binding, each module's limits. Asked at each use.
	Policy func() *policy.Policy
	// Logger hears of loads, refusals and reloads.
	Logger *slog.Logger
	// Changed, if set, is called (from any goroutine) when the tools the
	// catalog lists may have changed, for clients to hear of it.
	Changed func()
	// BeforeReload, if set, runs before a change of the tools dir is
	// applied (the app refreshes which files are warden's own); its error
	// is logged and the reload goes on.
	BeforeReload func() error
}

// Catalog is the modules of the tools dir and the tools they serve. Its
// methods are safe for concurrent use.
type Catalog struct {
	rt    *runtime.Runtime
	opts  Options
	log   *slog.Logger
	table *Table

	// pinMu orders a module's entry into the table against repin, so that
	// a pin changed while the module compiled is applied to it: the pinned
	// state is decided again under pinMu, from the config in force, right
	// before the module joins.
	pinMu sync.Mutex

	// mu guards what follows. It may be held while the table's lock is
	// taken (HeldBy asks the table whether a module is pinned), never the
	// other way round: the table calls nothing of the catalog.
	mu sync.Mutex
	// loadErrors holds the latest load failure of each module file.
	loadErrors map[string]error
	// loading holds the modules a background load has not finished yet,
	// for tools/list to name (Loading); loads counts those goroutines.
	loading     map[string]bool
	loadedOne   chan struct{} // closed and replaced whenever a background load ends
	loads       sync.WaitGroup
	cancelLoads []context.CancelFunc
	// progress hears of every module compile (SetLoadProgress); compiling
	// and compiled count them for its n/m.
	progress            func(LoadProgress)
	compiling, compiled int
	queued              map[string]bool // counted in compiling, not started yet
	// loadsEnded counts background loads that ended (LoadsEnded).
	loadsEnded atomic.Uint64
	// startup is where the first load of the tools dir is: startupNone,
	// startupRunning or startupEnded (StartupLoaded).
	startup atomic.Int32
}

// New returns a Catalog with no module loaded: call LoadTools or
// LoadToolsInBackground.
func New(opts Options) *Catalog {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Catalog{
		rt:         opts.Runtime,
		opts:       opts,
		log:        log,
		table:      NewTable(),
		loadErrors: make(map[string]error),
		loading:    make(map[string]bool),
		loadedOne:  make(chan struct{}),
	}
}

// Table returns the loaded modules and the tools they serve.
func (c *Catalog) Table() *Table { return c.table }

// policy returns the policy in force.
func (c *Catalog) policy() *policy.Policy { return c.opts.Policy() }

// config returns the config in force.
func (c *Catalog) config() *config.Config { return c.policy().Config() }

// changed tells whoever listens that the list may have changed.
func (c *Catalog) changed() {
	if c.opts.Changed != nil {
		c.opts.Changed()
	}
}

// Wait blocks until every background load started so far has ended, and
// the preloads they started.
func (c *Catalog) Wait() { c.loads.Wait() }

// Close stops the background loads, waits for them, and closes every
// module. Background loads end soon once their context is cancelled
// (compiles are abandoned, guest start-up is interrupted); Close waits so
// that none puts a module into a closed table.
func (c *Catalog) Close(ctx context.Context) {
	c.mu.Lock()
	for _, cancel := range c.cancelLoads {
		cancel()
	}
	c.mu.Unlock()
	c.loads.Wait()
	c.table.Close(ctx)
}
