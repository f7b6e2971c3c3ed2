// Package mcpserver serves a set of warden tools over the Model Context
// Protocol, on stdio or streamable HTTP, using the official go-sdk.
//
// The package knows nothing of WebAssembly: it serves whatever implements
// [Tools] (with what else the app can do given as [Options] fields), and
// maps the tool contract (package tool) onto the protocol: descriptors onto
// tools/list, results and typed failures onto tools/call, a call's
// [tool.Observer] onto progress and log notifications, and a change of the
// tool set onto notifications/tools/list_changed.
//
// Every failure of a tool, including every sandbox failure, reaches the client
// as a result with isError set and its kind under _meta[tool.MetaKind]; only
// a call to a tool that does not exist is a protocol error (-32602).
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/schema"
	"github.com/warden-run/warden/tool"
)

// Tools is what every Server needs of the app behind it: the tool set it
// lists and calls, and word of its changes. Everything else the app can do
// (call limits, scopes, resources and prompts, background loads, health)
// is an [Options] field, nil when it cannot; the server never looks for
// more methods on a Tools.
type Tools interface {
	// List returns every tool, sorted by name. The server validates each
	// descriptor and leaves out (and logs) those that are invalid.
	List() []tool.Descriptor
	// Call runs one call. It returns an error only when the named tool does
	// not exist (tool.KindNotFound), which the server reports as the protocol
	// error -32602. Every other failure must be a *tool.Result with IsError
	// and Error set. Call must return soon after ctx ends, and must run
	// nothing unless call.Pass admits a tools/call of call.Name.
	Call(ctx context.Context, call Call) (*tool.Result, error)
	// Subscribe registers f to be called after the tool set changed (for
	// example on hot reload) and returns a function that unregisters it.
	// f may be called from any goroutine; it must not be called while a
	// lock that List needs is held.
	Subscribe(f func()) (cancel func())
}

// Call is one tools/call request as the server hands it to [Tools].
type Call struct {
	// Name is the tool's name.
	Name string
	// Arguments is the client's arguments object, "{}" when it sent none.
	// It has not been validated against the input schema.
	Arguments json.RawMessage
	// Cursor is the continuation token of a paginated tool, from the
	// request's _meta[tool.MetaCursor]; empty on a first call. It comes from
	// the client and must be verified before a tool sees it.
	Cursor string
	// Session identifies the client session: the Mcp-Session-Id of a
	// streamable HTTP session, empty for stdio (one client per process) and
	// for stateless HTTP requests.
	Session string
	// Observer receives the call's progress and log lines; never nil.
	Observer tool.Observer
	// Client is the client behind the call, for what the call asks of it
	// (elicitation, sampling, roots); never nil.
	Client tool.Client
	// Pass is the server's word that the call came through its door (see
	// [Pass]); Tools must refuse a call whose Pass does not admit it.
	Pass *Pass
	// Task is set when the call runs as an MCP task (a task-augmented
	// tools/call of either protocol generation): the task budgets of
	// tools.limits apply instead of the interactive ones.
	Task bool
}

// Options configures a Server. The zero value is usable.
type Options struct {
	// Name and Version identify the server to clients. Name defaults to
	// "warden", Version to "dev".
	Name, Version string
	// Icons are the server's icons, sent in initialize's serverInfo
	// (config server.icons, checked there).
	Icons []tool.Icon
	// Instructions, if set, is sent to clients on connection.
	Instructions string
	// PageSize is the number of tools per tools/list page; 0 means 100.
	PageSize int
	// MaxInFlight bounds how many calls run at once across all clients;
	// 0 means 4 × GOMAXPROCS.
	MaxInFlight int
	// QueueWait bounds how long a call waits for a free slot before it fails
	// with a "timeout" result; 0 means 10 s. A tool's own timeout
	// (CallLimits.Timeout) bounds the wait too: its deadline starts when
	// the call arrives.
	QueueWait time.Duration
	// MaxInFlightPerClient bounds how many of the MaxInFlight slots one
	// client (a session, or the principal of a sessionless request) holds
	// at once; 0 means three quarters of MaxInFlight (at least 1).
	MaxInFlightPerClient int
	// MaxQueued bounds the calls waiting for a slot across clients, and
	// MaxQueuedPerClient those of one client; past them a call is refused
	// at once ("unavailable"). 0 means DefaultMaxQueued and
	// DefaultMaxQueuedPerClient (a connection's own bound on its unanswered
	// requests, DefaultMaxPending).
	MaxQueued, MaxQueuedPerClient int
	// RateLimit returns the limits on how often each client, and each
	// tool, may be called (token buckets); a call over one is refused with
	// kind rate_limited and a retry hint. It is asked at every call, so
	// that a config reload applies from the next one; a bucket keeps its
	// tokens across a change of its rate. A tool's CallLimits.Rate
	// replaces PerTool for it. nil means no limits.
	RateLimit func() RateLimits
	// RateStore, when set, keeps the rate limits' buckets where replicas
	// share them (PostgreSQL); nil keeps them in this process.
	RateStore RateStore
	// Now is the clock of the rate limits; nil means time.Now.
	Now func() time.Time
	// ListWait bounds how long a tools/list waits for modules still loading
	// in the background (see [Loader]) before it answers with the tools
	// loaded so far; 0 means 10 s, a negative value means not at all.
	ListWait time.Duration
	// MaxMessage bounds one inbound stdio message (a line) in bytes; 0 means
	// DefaultMaxMessage. HTTP bodies are bounded by HTTPOptions.
	MaxMessage int
	// Logger receives the server's own logs and every guest log line. It
	// must not write to stdout when serving stdio. nil logs text to stderr.
	Logger *slog.Logger
	// StateKey keys the HMAC of the requestState of input-required
	// results; servers sharing a key accept each other's states. nil means
	// a random key: states then do not survive a restart.
	StateKey []byte
	// SpentStates, when set, is the ledger of spent requestStates that
	// replicas share, so that a state is accepted once across all of them
	// and not once per replica. nil keeps the ledger in this process only.
	SpentStates SpentStates
	// ClientWait returns how long a requestState stays valid: the bound on
	// a person's answer (tools.defaults.client_wait). nil means 5 minutes.
	ClientWait func() time.Duration
	// QueueWaited, when set, hears how long each call waited for a call
	// slot (0 when one was free), for warden_queue_wait_seconds.
	QueueWaited func(time.Duration)
	// CallContext, when set, derives a call's context from the HTTP
	// request headers that carried it (nil on stdio): the trace context
	// of a W3C traceparent header.
	CallContext func(ctx context.Context, header http.Header) context.Context

	// The fields below are what the app behind [Tools] can do besides
	// listing and calling tools: the server's whole contract with it, in
	// one place (RATIONALE: "The server's contract"). Each is optional;
	// nil turns its feature off, as said for each.

	// CallLimits returns the limits of the calls of the named tool (its
	// module's instances, its own in-flight bound, its timeout and rate):
	// the server then admits a call only when the tool, and the module
	// whose instances run it, have room, so that a call never holds one of
	// the server's call slots while it waits for its module's instance.
	// nil means no tool has limits of its own: only the server's and the
	// client's slots, QueueWait and RateLimit bound a call.
	CallLimits func(tool string) CallLimits
	// OwnerLimits returns the limits of the instances of a feature's owner
	// (Module, MaxInstances, the session's turn; no tool's in-flight bound
	// or rate), which a feature that runs as no tool (its subject "") waits
	// for as a call of the owner's tools does, so that it never leaves an
	// admitted call waiting for an instance outside the server's fair
	// queue. nil means such a feature takes a server and a client slot
	// only.
	OwnerLimits func(owner string) CallLimits
	// Scopes is the OAuth scopes each tool needs (config tools.scopes),
	// checked against an OAuth principal's token before any request runs
	// as the tool. nil means no tool needs a scope: only
	// OAuthOptions.Scopes, required of every request, apply.
	Scopes ScopePolicy
	// Features serves resources, resource templates and prompts, and
	// completes their arguments. nil means the server serves tools only,
	// and declares no resources, prompts or completions capability.
	Features Features
	// FeatureRouter, consulted only with Features, names each feature
	// request's policy subject at the request. nil means a request runs as
	// the subject its feature declared at the last resync.
	FeatureRouter FeatureRouter
	// Loader reports the modules loading in the background. nil means the
	// tool set is complete when New returns: no list or call waits for a
	// load, and /healthz never says "loading".
	Loader Loader
	// LoadsEnded, consulted only with Loader, counts the loads that ended,
	// each before its module leaves Loader.Loading. The server resyncs
	// before a list or an unknown tool's call when the count moved since
	// its last resync, so that a list without tool.MetaLoading is complete even
	// when the load's change notification has not been applied yet. nil
	// means the server resyncs then only for a change notification not yet
	// applied.
	LoadsEnded func() uint64
	// StartupLoaded, consulted only with Loader, reports whether the load
	// begun when the server started ended (every module of the tools dir
	// then has joined or failed); until then /healthz says "loading" and
	// /healthz?ready answers 503. nil means the start's load ended when
	// Loader.Loading is empty.
	StartupLoaded func() bool
	// LoadErrors lists each module whose latest load failed, sorted, for
	// /healthz. nil means none is reported: /healthz is never "degraded".
	LoadErrors func() []LoadError
	// Refused lists the tools not served because several modules describe
	// their name; the server shows them in tools/list (_meta
	// MetaRefused) and /healthz, so that a refused tool is never silently
	// missing. nil means none is refused.
	Refused func() []Refusal
	// Stats reports the app's resource use; /healthz includes it
	// (JSON-encodable values by key, after the server's own keys). nil
	// means /healthz carries the server's keys only.
	Stats func() map[string]any
	// Tasks runs the tools/call requests clients make tasks of, and keeps
	// their records (MCP tasks, both protocol generations: tasks.go). nil
	// means the server offers no tasks: it declares no tasks capability or
	// extension, and a tool that requires task execution cannot be called.
	Tasks TaskRunner
	// EndSession is called once, after a session that made at least one
	// call has ended, for an app that keeps state per client session (the
	// runtime's session isolation). Sessionless clients (stateless HTTP)
	// have Call.Session "" and are never ended. nil means sessions are not
	// followed.
	EndSession func(ctx context.Context, session string)
}

// RateLimits are the server's rate limits; a nil field means none.
type RateLimits struct {
	PerClient, PerTool *RateLimit
	// PerPerson returns an OAuth principal's own limit (access.*), nil
	// for none; it is asked only of OAuth principals.
	PerPerson func(principal.Principal) *RateLimit
	// OnStoreError is what a call meets while Options.RateStore fails:
	// StoreErrorLocal counts it in this process, anything else refuses it.
	OnStoreError string
}

// Defaults applied by [New] to zero Options fields.
const (
	DefaultPageSize  = limits.DefaultPageSize
	DefaultQueueWait = limits.DefaultQueueWait
	DefaultListWait  = limits.DefaultListWait
	// DefaultMaxQueued bounds the calls waiting for a slot across clients;
	// DefaultMaxQueuedPerClient those of one client.
	DefaultMaxQueued          = 1024
	DefaultMaxQueuedPerClient = DefaultMaxPending
)

// Server serves a [Tools] over MCP. It is safe for concurrent use; one Server
// may serve stdio and any number of HTTP clients at once.
type Server struct {
	tools Tools
	opts  Options
	log   *slog.Logger
	sdk   *mcp.Server
	admit *admission
	rates *rateLimiter
	warm  *warmStacks
	// encodeTwice, for tests, leaves every result to the go-sdk's own
	// encoding (encodableReplies then only checks that it encodes).
	encodeTwice bool
	// chain is the go-sdk's whole receiving handler, as its dispatch calls
	// it for a request (onWarmStacks, the outermost middleware, keeps it),
	// for the stdio fast path (stdiofast.go).
	chain mcp.MethodHandler
	// warmChain is the chain below onWarmStacks: what the stdio fast path
	// calls when it already runs on a warm stack (warmStacks.start).
	warmChain mcp.MethodHandler
	cancel    func()

	// syncMu serializes resyncs; registered is the tool set the go-sdk
	// server holds, by name, with each descriptor's JSON to detect changes.
	syncMu     sync.Mutex
	registered map[string][]byte
	// feat is the same for resources, templates and prompts (resources.go).
	feat        *featureState
	stopWatches func()

	// connections counts the clients Serve has connected, to name them.
	connections atomic.Int64
	// sessions holds the IDs of live sessions that made calls, watched so
	// that EndSession hears when they end.
	sessions sync.Map

	// states seals and opens the requestState of input-required results.
	states *stateSealer

	// tasks is the task support of the registered tools (tasks.go).
	tasks *taskState

	// syncedLoads is Options.LoadsEnded as of the last resync.
	syncedLoads atomic.Uint64

	resyncPending atomic.Bool
	resyncRunning atomic.Bool
	resyncs       atomic.Int64 // completed resyncs, for tests
}

// New returns a Server for tools, with the tool set already loaded. Call
// [Server.Close] when done, to stop following changes of the tool set.
func New(tools Tools, opts Options) *Server {
	if opts.Name == "" {
		opts.Name = "warden"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 4 * runtime.GOMAXPROCS(0)
	}
	if opts.ListWait == 0 {
		opts.ListWait = DefaultListWait
	}
	if opts.QueueWait <= 0 {
		opts.QueueWait = DefaultQueueWait
	}
	if opts.MaxInFlightPerClient <= 0 {
		opts.MaxInFlightPerClient = max(1, (3*opts.MaxInFlight+3)/4)
	}
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = DefaultMaxQueued
	}
	if opts.MaxQueuedPerClient <= 0 {
		opts.MaxQueuedPerClient = DefaultMaxQueuedPerClient
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	s := &Server{
		tools:      tools,
		opts:       opts,
		log:        opts.Logger,
		admit:      newAdmission(opts.MaxInFlight, opts.MaxInFlightPerClient, opts.MaxQueued, opts.MaxQueuedPerClient),
		rates:      newRateLimiter(opts.Now, opts.RateStore, opts.Logger),
		warm:       newWarmStacks(opts.MaxInFlight),
		registered: make(map[string][]byte),
		states:     newStateSealer(opts.StateKey, opts.SpentStates),
		feat:       newFeatureState(),
		tasks:      newTaskState(),
	}
	sdkOpts := &mcp.ServerOptions{
		Instructions: opts.Instructions,
		// The go-sdk logs every session connect at info; ours is the caller's
		// logger one level down so that serve's stderr stays readable.
		Logger:   slog.New(levelShift{opts.Logger.Handler()}),
		PageSize: opts.PageSize,
		// Advertised even while no tool is loaded, because tools may appear
		// on a hot reload; logging because guest log lines are forwarded.
		Capabilities: &mcp.ServerCapabilities{
			Tools:   &mcp.ToolCapabilities{ListChanged: true},
			Logging: &mcp.LoggingCapabilities{},
		},
	}
	s.featureOptions(sdkOpts)
	s.sdk = mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version, Icons: iconsFor(opts.Icons)}, sdkOpts)
	s.sdk.AddReceivingMiddleware(s.refusedMiddleware)
	if opts.Loader != nil {
		s.sdk.AddReceivingMiddleware(s.whileLoading(opts.Loader))
	}
	// Before the loading and refusal middlewares: the caller is known (the
	// principal in the context) before anything else is done for it. Its
	// scopes are checked in the door (enter), for every way into module
	// code; only the reply check below wraps this one.
	s.sdk.AddReceivingMiddleware(s.authorize)
	s.resync()
	s.stopWatches = s.startFeatures()
	s.cancel = tools.Subscribe(s.scheduleResync)
	if opts.Tasks != nil {
		s.sdk.AddReceivingMiddleware(s.taskAdvertising)
	}
	s.sdk.AddReceivingMiddleware(s.encodableReplies) // outermost but one: it sees every reply (replyguard.go)
	s.sdk.AddReceivingMiddleware(s.onWarmStacks)     // outermost: the whole chain runs on a warm stack (warmstack.go)
	return s
}

// Loader is what Options.Loader holds: the modules loading in the
// background. While Loading is not empty, a tools/list waits for the loads
// to end, up to Options.ListWait (many clients list once and never again),
// and a result given while some are still loading names them in its _meta
// under tool.MetaLoading, so that a client can tell a partial list from a
// complete one (the tools appear with notifications/tools/list_changed); a
// tools/call of a tool not known yet waits for the loads to end (up to
// Options.QueueWait) before it is answered "unknown tool".
type Loader interface {
	Loading() []string
	// AwaitLoad waits for the next background load to end and reports
	// true, or reports false at once if none is running (or when ctx ends).
	AwaitLoad(ctx context.Context) bool
}

// stale reports whether the go-sdk's tool set may lag s.tools: a resync
// is pending or running, or a load ended since the last one.
func (s *Server) stale() bool {
	counter := s.opts.LoadsEnded
	return s.resyncPending.Load() || s.resyncRunning.Load() ||
		counter != nil && counter() != s.syncedLoads.Load()
}

func (s *Server) whileLoading(l Loader) mcp.Middleware {
	known := func(name string) bool {
		s.syncMu.Lock()
		defer s.syncMu.Unlock()
		_, ok := s.registered[name]
		return ok
	}
	stale := s.stale
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			waited := false
			listing := method == "tools/list" || isFeatureList(method)
			if listing && s.opts.ListWait > 0 && len(l.Loading()) > 0 {
				wait, cancel := context.WithTimeout(ctx, s.opts.ListWait)
				for l.AwaitLoad(wait) {
				}
				cancel()
				waited = true
			}
			if listing && (waited || stale()) {
				// A load that just ended may not have notified yet, or its
				// resync may not have run: apply it, so that a list without
				// tool.MetaLoading is the complete one.
				s.resync()
			}
			p, isCall := req.GetParams().(*mcp.CallToolParamsRaw)
			isCall = isCall && method == "tools/call"
			if isCall && !known(p.Name) && stale() {
				// A load that just ended has notified, but its resync may not
				// have run: apply it before deciding the name is unknown.
				s.resync()
			}
			if isCall && !known(p.Name) && len(l.Loading()) > 0 {
				// Resync after every load that ends, and once more after the
				// last: its change notification may not have been applied yet.
				// The wait is bounded like a wait for a slot (QueueWait): past
				// it the call is answered "unknown tool" as the list stands.
				wait, cancel := context.WithTimeout(ctx, s.opts.QueueWait)
				for {
					more := l.AwaitLoad(wait)
					s.resync()
					if !more || known(p.Name) {
						break
					}
				}
				cancel()
			}
			if s.awaitsFeature(method, req) {
				s.awaitFeature(ctx, l, method, req)
			}
			res, err := next(ctx, method, req)
			if !listing || err != nil {
				return res, err
			}
			if isFeatureList(method) {
				markLoading(res, l.Loading())
				return res, err
			}
			if lr, ok := res.(*mcp.ListToolsResult); ok {
				if loading := l.Loading(); len(loading) > 0 {
					if lr.Meta == nil {
						lr.Meta = mcp.Meta{}
					}
					lr.Meta[tool.MetaLoading] = loading
				}
			}
			return res, err
		}
	}
}

// Close stops following changes of the tool set. It does not end sessions:
// cancel the context given to ServeStdio or ListenAndServe for that.
func (s *Server) Close() error {
	s.warm.stop()
	if s.cancel != nil {
		s.cancel()
	}
	if s.stopWatches != nil {
		s.stopWatches()
	}
	return nil
}

// Serve serves one client over t until the client disconnects or ctx ends.
// ServeStdio is Serve over the process's stdin and stdout; Serve itself is
// for other transports, such as the go-sdk's in-memory one in tests.
//
// A transport that carries one client, like stdio, has no session ID of its
// own; Serve gives it one ("conn-N"), so that the client gets what an HTTP
// session gets: per-session tool state (isolation: session) that ends when
// the client disconnects.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	id := fmt.Sprintf("conn-%d", s.connections.Add(1))
	return served(ctx, s.sdk.Run(ctx, &sessionTransport{Transport: t, id: id}))
}

// served is the error Serve returns for the end of a session, err.
func served(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return nil // asked to stop: not a failure
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrClosedPipe):
		return nil // the client hung up: the normal end of a session
	}
	return err
}

// sessionTransport gives the connections of a session-less transport an ID.
type sessionTransport struct {
	mcp.Transport
	id string
}

func (t *sessionTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if c.SessionID() != "" {
		return c, nil
	}
	return &sessionConnection{Connection: c, id: t.id}, nil
}

type sessionConnection struct {
	mcp.Connection
	id string
}

func (c *sessionConnection) SessionID() string { return c.id }

// scheduleResync coalesces bursts of change notifications into as few
// resyncs as possible, off the notifier's goroutine: Subscribe's callback may
// run inside the registry's reload, and List must not be called from there.
func (s *Server) scheduleResync() {
	s.resyncPending.Store(true)
	if !s.resyncRunning.CompareAndSwap(false, true) {
		return // the running loop will see the pending flag
	}
	go func() {
		for {
			for s.resyncPending.Swap(false) {
				s.resync()
			}
			s.resyncRunning.Store(false)
			// A change may have arrived between the last Swap and the Store.
			if !s.resyncPending.Load() || !s.resyncRunning.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// resync makes the go-sdk server's tool set equal to s.tools.List(). The
// go-sdk sends notifications/tools/list_changed (debounced) when it changed.
func (s *Server) resync() {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	defer s.resyncs.Add(1)
	if s.opts.LoadsEnded != nil {
		// Read before List: a load ending after this makes the next list
		// resync again.
		s.syncedLoads.Store(s.opts.LoadsEnded())
	}

	seen := make(map[string]bool)
	listed := s.tools.List()
	defer func() { s.tasks.noteTools(listed, s.registered) }()
	for _, d := range listed {
		if seen[d.Name] {
			s.log.Error("tool listed twice; serving the first", "tool", d.Name)
			continue
		}
		if _, err := schema.CompileDescriptor(&d); err != nil {
			s.log.Error("skipping invalid tool", "tool", d.Name, "error", err)
			continue
		}
		fingerprint, err := json.Marshal(d)
		if err != nil {
			s.log.Error("skipping tool", "tool", d.Name, "error", err)
			continue
		}
		seen[d.Name] = true
		if old, ok := s.registered[d.Name]; ok && bytes.Equal(old, fingerprint) {
			continue
		}
		if err := s.addTool(&d); err != nil {
			s.log.Error("skipping tool the protocol layer refused", "tool", d.Name, "error", err)
			delete(seen, d.Name)
			if _, ok := s.registered[d.Name]; ok {
				s.sdk.RemoveTools(d.Name)
				delete(s.registered, d.Name)
			}
			continue
		}
		s.registered[d.Name] = fingerprint
	}
	var gone []string
	for name := range s.registered {
		if !seen[name] {
			gone = append(gone, name)
			delete(s.registered, name)
		}
	}
	if len(gone) > 0 {
		s.sdk.RemoveTools(gone...)
	}
	s.resyncFeatures()
}

// addTool registers d with the go-sdk server. AddTool panics on what it
// considers a bad tool (schema shape, x-mcp-header annotations); Validate has
// already run, so a panic here is a disagreement between the two validators,
// and it must cost one tool, never the server.
func (s *Server) addTool(d *tool.Descriptor) (err error) {
	t := toolFor(d)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	s.sdk.AddTool(t, s.handler(d.Name))
	return nil
}

// handler returns the go-sdk handler of the tool called name: a call goes
// through the door (enter) as the tool itself.
func (s *Server) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := arguments(req.Params.Arguments)
		var failure tool.Kind // of the tool's result, for the missing-capabilities mapping
		d := &door[*mcp.CallToolResult]{
			method: MethodCallTool, name: name, what: name, subject: name, args: args,
			session: req.Session, extra: req.Extra, progress: req.Params.GetProgressToken(),
			capsOf: req.ClientCapabilities, state: req.Params.RequestState, responses: req.Params.InputResponses,
			refused: func(r *tool.Result) (*mcp.CallToolResult, error) { return s.resultFor(name, r), nil },
			stopped: func(inputs mcp.InputRequestMap, state string) *mcp.CallToolResult {
				return &mcp.CallToolResult{InputRequests: inputs, RequestState: state}
			},
			failed: func(err error) (*mcp.CallToolResult, error) {
				if tool.KindOf(err) == tool.KindNotFound {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
				}
				var te *tool.Error
				if errors.As(err, &te) {
					// A typed failure of the door's own (the client's
					// answers could not be sealed): answered as its kind.
					return s.resultFor(name, tool.ErrorResult(te)), nil
				}
				// Outside the contract; still the tool's failure, not the protocol's.
				s.log.Error("tool call returned an error instead of a result", "tool", name, "error", err)
				return s.resultFor(name, tool.ErrorResult(tool.Errorf(tool.KindInternal, "%v", err))), nil
			},
			kind: func(*mcp.CallToolResult) tool.Kind { return failure },
		}
		return enter(s, ctx, d, func(ctx context.Context, e entry) (*mcp.CallToolResult, error) {
			res, err := s.tools.Call(ctx, Call{
				Name:      name,
				Arguments: args,
				Cursor:    cursor(req.Params.Meta),
				Session:   e.Session,
				Observer:  e.Observer,
				Client:    e.Client,
				Pass:      e.Pass,
			})
			if err != nil {
				return nil, err
			}
			if res == nil {
				res = tool.ErrorResult(tool.Errorf(tool.KindInternal, "tool %s returned no result", name))
			}
			if res.Error != nil {
				failure = res.Error.Kind
			}
			return s.resultFor(name, res), nil
		})
	}
}

// clientWait is how long a requestState stays valid.
func (s *Server) clientWait() time.Duration {
	if s.opts.ClientWait != nil {
		if d := s.opts.ClientWait(); d > 0 {
			return d
		}
	}
	return 5 * time.Minute
}

// watchSession arranges for Options.EndSession to hear when session ends.
func (s *Server) watchSession(id string, ss *mcp.ServerSession) {
	ender := s.opts.EndSession
	if ender == nil || id == "" {
		return
	}
	if _, loaded := s.sessions.LoadOrStore(id, struct{}{}); loaded {
		return
	}
	go func() {
		ss.Wait()
		s.sessions.Delete(id)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ender(ctx, id)
	}()
}

// ticketFor is what a call of the tool called name must fit to run.
func (s *Server) ticketFor(ctx context.Context, name, session string) *ticket {
	t := &ticket{client: clientOf(ctx, session), tool: name, session: session}
	if s.opts.CallLimits != nil && name != "" {
		t.limits = s.opts.CallLimits(name)
	}
	return t
}

// clientOf names the client behind a request, for its share of the slots
// and its rate limit: its session, or, for a sessionless request, its
// principal.
func clientOf(ctx context.Context, session string) string {
	if session != "" {
		return "session " + session
	}
	return "principal " + principal.From(ctx).Subject
}

// acquireTicket takes a call slot for t, waiting at most QueueWait (and
// at most the tool's timeout). It returns a non-nil result instead when
// the call must fail.
func (s *Server) acquireTicket(ctx context.Context, t *ticket) (release func(), waited time.Duration, fail *tool.Result) {
	wait, bound := s.opts.QueueWait, "server.queue_wait"
	if d := t.limits.Timeout; d > 0 && d < wait {
		wait, bound = d, ""
	}
	waited, blocked, err := s.admit.acquire(ctx, t, wait)
	if err != nil {
		return nil, waited, tool.ErrorResult(err)
	}
	if blocked == "" {
		if s.opts.QueueWaited != nil {
			s.opts.QueueWaited(waited)
		}
		return func() { s.admit.release(t) }, waited, nil
	}
	if s.opts.QueueWaited != nil {
		s.opts.QueueWaited(waited)
	}
	// Waiting ran out: the call timed out before it could start.
	if bound == "" {
		return nil, waited, tool.ErrorResult(tool.Errorf(tool.KindTimeout,
			"server busy: %s did not start within its timeout of %s, which counts its wait for a call slot: %s; retry later",
			t.tool, wait, blocked))
	}
	return nil, waited, tool.ErrorResult(tool.Errorf(tool.KindTimeout,
		"server busy: waited %s (%s) for a call slot: %s; retry later", wait, bound, blocked))
}

// arguments normalizes a missing or null arguments object to "{}": MCP makes
// arguments optional, and every input schema is an object schema.
func arguments(raw json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return json.RawMessage("{}")
	}
	return raw
}

func cursor(meta mcp.Meta) string {
	c, _ := meta[tool.MetaCursor].(string)
	return c
}

// levelShift lowers every record by one slog level step (4), so that the
// go-sdk's chatty info logs are debug logs of ours and its errors warnings.
type levelShift struct{ h slog.Handler }

func (l levelShift) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level-4)
}

func (l levelShift) Handle(ctx context.Context, r slog.Record) error {
	r.Level -= 4
	return l.h.Handle(ctx, r)
}

func (l levelShift) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelShift{l.h.WithAttrs(attrs)}
}

func (l levelShift) WithGroup(name string) slog.Handler { return levelShift{l.h.WithGroup(name)} }
