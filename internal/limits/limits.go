// Package limits is the one home of warden's bounds as plain data: the
// default of every bound that config.yaml sets and a package also applies to
// a zero option, the valid range of one module's limits, and the syntax of a
// call rate.
//
// It imports no warden package, so that config (which reads the bounds from
// config.yaml), runtime (which enforces a module's), mcpserver (the
// server's) and the capabilities take them from one definition instead of
// each writing its own copy of "30s" or 128 MiB.
package limits

import "time"

// Defaults of one module's limits (runtime.Limits, tools.defaults).
const (
	DefaultTimeout       = 30 * time.Second
	DefaultMemory        = 128 << 20
	DefaultMaxOutput     = 1 << 20
	DefaultLoadBudget    = 10 * time.Second
	DefaultIsolation     = IsolationSession
	DefaultMaxInstances  = 8
	DefaultCaptureBytes  = 64 << 10
	DefaultLogBytes      = 1 << 20
	DefaultLogLines      = 1000
	DefaultCompileBudget = 60 * time.Second
	// DefaultFuel is about ten seconds of guest work on this generation of
	// hardware: no honest tool notices it, a runaway loop hits it.
	DefaultFuel = 20_000_000_000
	// DefaultMaxInstanceMemory bounds the linear memory of all tool
	// instances together (runtime.Options, server.max_instance_memory).
	DefaultMaxInstanceMemory = 256 << 20
	// DefaultCacheMax bounds the compile cache on disk (tools.cache_max):
	// room for the compiled code of a few dozen Go guests of this
	// generation (20-40 MB each), far below a small disk.
	DefaultCacheMax = 2 << 30
)

// Defaults of the MCP server (mcpserver.Options and HTTPOptions, server.*).
const (
	DefaultPageSize  = 100
	DefaultQueueWait = 10 * time.Second
	DefaultListWait  = 10 * time.Second
	// DefaultMaxMessage bounds one inbound JSON-RPC message: a stdio line
	// or an HTTP request body.
	DefaultMaxMessage     = 16 << 20
	DefaultHeaderTimeout  = 10 * time.Second
	DefaultBodyTimeout    = 30 * time.Second
	DefaultIdleTimeout    = 2 * time.Minute
	DefaultMaxConnections = 256
)

// The isolation models a module may run under (runtime.Isolation documents
// each).
const (
	IsolationSession = "session"
	IsolationCall    = "call"
	IsolationShared  = "shared"
)

// Defaults of the capabilities, of fetching modules, of OAuth and of the
// audit log (net.*, memory.*, lsp.*, tools.defaults.client_wait,
// tools.fetch.*, server.oauth.jwks_refresh_min, log.audit_max_size).
const (
	DefaultNetMaxResponse       = 4 << 20
	DefaultNetTimeout           = 30 * time.Second
	DefaultMemoryMaxValue       = 256 << 10
	DefaultPostgresMaxConns     = 8
	DefaultPostgresQueryTimeout = 5 * time.Second
	DefaultLSPIdleTTL           = 10 * time.Minute
	DefaultLSPTimeout           = 30 * time.Second
	DefaultClientWait           = 5 * time.Minute
	DefaultFetchMaxSize         = 64 << 20
	DefaultFetchTimeout         = 2 * time.Minute
	DefaultJWKSRefreshMin       = time.Minute
	DefaultAuditMaxSize         = 100 << 20
)

// DefaultLSPLanguages are the languages the lsp capability serves without
// any lsp.languages entry (hostfuncs/lsp.DefaultLanguages, whose test pins
// that the two agree), so that config accepts `lsp: [python]` in a grant
// without importing the capability.
var DefaultLSPLanguages = []string{"c", "cpp", "go", "javascript", "python", "rust", "typescript"}

// Defaults of task execution (tasks.*, internal/tasks): how many unfinished
// tasks a client and the server may hold, how many records (finished or
// not) they may keep, how long a record is kept (TTL,
// and the most a client may ask for), how often a client is told to poll,
// and how long a replica's claim on a running task lasts unrenewed.
const (
	DefaultTasksMaxPerClient = 16
	DefaultTasksMaxTotal     = 256
	// Records of any status: a client finishing short tasks fast keeps
	// their results until their TTL, so unfinished tasks alone do not
	// bound what it stores.
	DefaultTasksMaxRecordsPerClient = 1000
	DefaultTasksMaxRecords          = 10000
	DefaultTaskTTL                  = time.Hour
	DefaultTaskMaxTTL               = 24 * time.Hour
	DefaultTaskPollInterval         = 2 * time.Second
	DefaultTaskLease                = 30 * time.Second
)

// MaxTaskResult is the most tasks.max_result may be, and what a task store
// reads of one stored result whatever its file or row holds.
const MaxTaskResult = 1 << 30

// Defaults of the questions that wait for a person in the console
// (approvals.*, internal/approvals).
const (
	// DefaultApprovalsMaxPending bounds the questions waiting at once, on
	// one process (the memory broker) or across replicas (PostgreSQL).
	DefaultApprovalsMaxPending = 64
	// DefaultApprovalsMaxPendingPerCaller bounds the questions one caller
	// (principal) has waiting at once, so that one caller cannot take every
	// place of DefaultApprovalsMaxPending for client_wait.
	DefaultApprovalsMaxPendingPerCaller = 8
	// DefaultApprovalsPoll is how often a question waiting in PostgreSQL
	// reads its row when no notification came (a lost LISTEN connection).
	DefaultApprovalsPoll = time.Second
)
