package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/hostfuncs/internal/pathguard"
	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/internal/userdirs"
	"github.com/warden-run/warden/tool"
)

// DefaultMaxValueBytes is the value limit when Config.MaxValueBytes is 0.
const DefaultMaxValueBytes = limits.DefaultMemoryMaxValue

// Defaults of the PostgreSQL backend's bounds.
const (
	DefaultMaxConns     = limits.DefaultPostgresMaxConns
	DefaultQueryTimeout = limits.DefaultPostgresQueryTimeout
)

// Config is the memory capability's configuration.
type Config struct {
	// ProjectRoot is the project directory; memories live in
	// <ProjectRoot>/.warden/memories. It must be set.
	ProjectRoot string
	// MaxValueBytes bounds a stored value, appends included. 0 means
	// DefaultMaxValueBytes.
	MaxValueBytes int
	// Deny holds the user's deny patterns (config security.deny); with the
	// built-in ones (the fs capability's list) they apply to the file each
	// topic is stored in (.warden/memories/<topic>.md under ProjectRoot),
	// whichever backend stores it.
	Deny []string
	// Home is the directory "~" stands for in deny patterns; empty means
	// the user's home directory.
	Home string
	// Backend is where memories are stored: "" or "file" for the project's
	// .warden/memories directory, or a postgres:// URL (config
	// memory.backend) for a PostgreSQL database shared by replicas. It is
	// read at start: a reload naming another backend keeps the running one.
	Backend string
	// MaxConns bounds the PostgreSQL connection pool; 0 means
	// DefaultMaxConns.
	MaxConns int
	// QueryTimeout bounds each PostgreSQL operation; 0 means
	// DefaultQueryTimeout.
	QueryTimeout time.Duration
}

// front is one configuration of the capability: the checks that apply to
// every backend, and the backend.
type front struct {
	backend     backend
	projectRoot string
	maxValue    int
	// guard holds the deny-list of the fs capability; it is applied to the
	// path every topic is (or, on PostgreSQL, would be) stored at.
	guard *pathguard.Guard
}

// check validates cfg and returns its front, with the backend to be opened
// (nil) unless keep, the running backend, is the one cfg names.
func (c Config) check() (*front, error) {
	if c.ProjectRoot == "" {
		return nil, errors.New("memory: project root is not set")
	}
	if c.MaxValueBytes < 0 {
		return nil, fmt.Errorf("memory: max value bytes must not be negative, got %d", c.MaxValueBytes)
	}
	if c.MaxConns < 0 || c.QueryTimeout < 0 {
		return nil, fmt.Errorf("memory: max conns and query timeout must not be negative, got %d and %v", c.MaxConns, c.QueryTimeout)
	}
	if err := CheckBackend(c.Backend); err != nil {
		return nil, fmt.Errorf("memory: config key memory.backend: %w", err)
	}
	home := c.Home
	if home == "" {
		// Without a home directory the "~/" rules cannot be expanded; refuse
		// rather than run without them (userdirs.Home falls back to the user
		// database when $HOME is missing).
		var err error
		if home, err = userdirs.Home(); err != nil {
			return nil, fmt.Errorf("memory: home directory for deny rules: %w", err)
		}
	}
	guard, err := pathguard.New(pathguard.Config{ProjectDir: c.ProjectRoot, Deny: c.Deny, Home: home})
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	f := &front{projectRoot: c.ProjectRoot, maxValue: c.MaxValueBytes, guard: guard}
	if f.maxValue == 0 {
		f.maxValue = DefaultMaxValueBytes
	}
	return f, nil
}

// open opens the backend cfg names.
func (c Config) open(ctx context.Context) (backend, error) {
	if isPostgresURL(c.Backend) {
		return openPostgres(ctx, c)
	}
	s := &store{projectRoot: c.ProjectRoot}
	s.sweepStaleTemps(staleTempAge, time.Now())
	return s, nil
}

// Memory is the warden.memory capability.
type Memory struct {
	front  atomic.Pointer[front]
	logger *slog.Logger
	// watchers hear of every write (resources.go).
	watchers watchers
}

// New returns the capability for cfg, opening its backend: for PostgreSQL,
// connecting and migrating the schema within ctx. logger receives one debug
// line per operation (tool, op, topic; never a value); nil discards them.
// Close releases the backend.
func New(cfg Config, logger *slog.Logger) (*Memory, error) {
	return NewContext(context.Background(), cfg, logger)
}

// NewContext is New bounded by ctx (connecting to PostgreSQL).
func NewContext(ctx context.Context, cfg Config, logger *slog.Logger) (*Memory, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f, err := cfg.check()
	if err != nil {
		return nil, err
	}
	if f.backend, err = cfg.open(ctx); err != nil {
		return nil, err
	}
	m := &Memory{logger: logger}
	m.front.Store(f)
	return m, nil
}

// Close releases the backend (PostgreSQL's connection pool). Calls made
// after it fail.
func (m *Memory) Close() {
	m.front.Load().backend.close()
}

// SetConfig replaces the configuration. Calls already running finish under
// the old one; the next operation uses cfg. An invalid cfg changes nothing.
// The backend is read at start: a cfg naming another one than the running
// one keeps the running one, with a warning (a file store follows a new
// project root, which is part of the same setting).
func (m *Memory) SetConfig(cfg Config) error {
	f, err := cfg.check()
	if err != nil {
		return err
	}
	old := m.front.Load().backend
	if _, isFile := old.(*store); isFile && !isPostgresURL(cfg.Backend) {
		f.backend = &store{projectRoot: cfg.ProjectRoot, reached: old.(*store).reached}
	} else {
		f.backend = old
		if want := backendID(cfg); want != old.id() {
			m.logger.Warn("memory.backend changed; restart warden to use the new backend", "running", old.id(), "configured", want)
		}
	}
	m.front.Store(f)
	return nil
}

// backendID is the id the backend cfg names would have.
func backendID(cfg Config) string {
	if isPostgresURL(cfg.Backend) {
		return postgresID(cfg.Backend)
	}
	return "file"
}

// Name returns "memory".
func (m *Memory) Name() string { return "memory" }

// request is one guest request; see doc.go for each op's fields.
type request struct {
	Op     string  `json:"op"`
	Topic  string  `json:"topic"`
	Value  *string `json:"value"`
	Prefix string  `json:"prefix"`
}

func (r *request) writes() bool { return r.Op == "set" || r.Op == "append" || r.Op == "delete" }

// Replies, one per op.
type (
	getReply struct {
		Topic     string    `json:"topic"`
		Value     string    `json:"value"`
		Truncated bool      `json:"truncated,omitempty"`
		Modified  time.Time `json:"modified"`
	}
	putReply struct {
		Topic string `json:"topic"`
		Size  int    `json:"size"`
	}
	listReply struct {
		Topics    []Entry  `json:"topics"`
		Truncated bool     `json:"truncated,omitempty"`
		Skipped   *Skipped `json:"skipped,omitempty"`
	}
	deleteReply struct {
		Topic   string `json:"topic"`
		Deleted bool   `json:"deleted"`
	}
)

// Serve handles one warden.memory request.
func (m *Memory) Serve(ctx context.Context, call *hostfuncs.Call, raw []byte) (any, error) {
	req, decodeErr := decode(raw)
	if err := gate(call, req); err != nil {
		m.logger.Info("memory denied", "tool", call.Tool, "op", req.op(), "topic", req.topic(), "reason", err)
		return nil, err
	}
	if decodeErr != nil {
		return nil, decodeErr
	}
	m.logger.Debug("memory", "tool", call.Tool, "op", req.Op, "topic", req.Topic, "prefix", req.Prefix)
	f := m.front.Load()
	switch req.Op {
	case "get":
		value, truncated, modified, err := f.get(ctx, req.Topic)
		if err != nil {
			return nil, f.storeError(req, err)
		}
		return getReply{Topic: req.Topic, Value: string(value), Truncated: truncated, Modified: modified.UTC()}, nil
	case "set", "append":
		size, err := f.put(ctx, req.Topic, []byte(*req.Value), req.Op == "append")
		if err != nil {
			return nil, f.storeError(req, err)
		}
		m.watchers.notify(Change{Topic: req.Topic, Op: req.Op})
		return putReply{Topic: req.Topic, Size: size}, nil
	case "delete":
		deleted, err := f.remove(ctx, req.Topic)
		if err != nil {
			return nil, f.storeError(req, err)
		}
		if deleted {
			m.watchers.notify(Change{Topic: req.Topic, Op: req.Op})
		}
		return deleteReply{Topic: req.Topic, Deleted: deleted}, nil
	default: // "list"; decode accepts no other op
		topics, truncated, skipped, err := f.list(ctx, req.Prefix, func(topic string) bool { return granted(call.Grants.MemoryTopics, topic) })
		if err != nil {
			return nil, f.storeError(req, err)
		}
		reply := listReply{Topics: topics, Truncated: truncated}
		if skipped.any() {
			reply.Skipped = &skipped
		}
		return reply, nil
	}
}

func (r *request) op() string {
	if r == nil {
		return ""
	}
	return r.Op
}

func (r *request) topic() string {
	if r == nil {
		return ""
	}
	return r.Topic
}

// decode parses and validates a request without touching anything. On
// failure it returns nil and an invalid_arguments error.
func decode(raw []byte) (*request, error) {
	var req request
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, tool.Errorf(tool.KindInvalidArguments, "memory: bad request: %v", err)
	}
	if dec.More() {
		return nil, tool.Errorf(tool.KindInvalidArguments, "memory: bad request: trailing data after the JSON object")
	}
	invalid := func(format string, args ...any) (*request, error) {
		return nil, tool.Errorf(tool.KindInvalidArguments, "memory %s: "+format, append([]any{req.Op}, args...)...)
	}
	switch req.Op {
	case "get", "set", "append", "delete":
		if err := ValidateTopic(req.Topic); err != nil {
			return invalid("%v", err)
		}
		if req.Prefix != "" {
			return invalid("takes no prefix")
		}
	case "list":
		if req.Topic != "" {
			return invalid("takes a prefix, not a topic")
		}
		if req.Prefix != "" {
			if err := ValidateTopic(req.Prefix); err != nil {
				return invalid("prefix: %v", err)
			}
		}
	default:
		return nil, tool.Errorf(tool.KindInvalidArguments, "memory: unknown op %q (want get, set, append, list or delete)", req.Op)
	}
	switch {
	case req.Op == "set" || req.Op == "append":
		if req.Value == nil {
			return invalid("needs a value")
		}
	case req.Value != nil:
		return invalid("takes no value")
	}
	return &req, nil
}

// gate is the capability's one permission check. It runs before anything is
// touched; req is nil when the request did not decode, and then only the
// access level is checked (a tool without a grant is denied whatever it sends).
func gate(call *hostfuncs.Call, req *request) error {
	g := call.Grants
	switch g.Memory {
	case tool.MemoryRead, tool.MemoryReadWrite:
	default:
		if req != nil {
			level := tool.MemoryRead
			if req.writes() {
				level = tool.MemoryReadWrite
			}
			return tool.DeniedFor(tool.Need{Key: "memory", Value: string(level)},
				"memory: tool %q has no memory grant (config key tools.grants.%[1]s.memory: %s)", call.Tool, level)
		}
		return tool.Errorf(tool.KindDenied, "memory: tool %q has no memory grant (config key tools.grants.%[1]s.memory: read or read-write)", call.Tool)
	}
	if req == nil {
		return nil
	}
	if req.writes() && g.Memory != tool.MemoryReadWrite {
		return tool.DeniedFor(tool.Need{Key: "memory", Value: string(tool.MemoryReadWrite)},
			"memory %s: tool %q may only read memories (config key tools.grants.%[2]s.memory: read-write)", req.Op, call.Tool)
	}
	if len(g.MemoryTopics) == 0 {
		return nil
	}
	if req.Op == "list" {
		// A listing is allowed when it could show something granted: its
		// prefix lies within a granted prefix, or contains one. Topics
		// outside the grant are filtered out of the reply.
		if req.Prefix == "" || slices.ContainsFunc(g.MemoryTopics, func(p string) bool {
			return ValidateTopic(p) == nil && (within(req.Prefix, p) || within(p, req.Prefix))
		}) {
			return nil
		}
		return tool.Errorf(tool.KindDenied, "memory list: prefix %q is outside tool %q's topics %q (config key tools.grants.%[2]s.memory_topics)", req.Prefix, call.Tool, g.MemoryTopics)
	}
	if !granted(g.MemoryTopics, req.Topic) {
		return tool.DeniedFor(tool.Need{Key: "memory.topics", Value: req.Topic},
			"memory %s: topic %q is outside tool %q's topics %q (config key tools.grants.%[3]s.memory_topics)", req.Op, req.Topic, call.Tool, g.MemoryTopics)
	}
	return nil
}

// granted reports whether topic lies within one of prefixes, or prefixes is
// empty (no topic limit). Malformed prefixes grant nothing.
// Granted reports whether topic is one of prefixes or under one, as a
// grant's memory_topics allow it (none listed: every topic). The per-person
// cap of memory:// resources (internal/policy) reads topics the same way.
func Granted(prefixes []string, topic string) bool { return granted(prefixes, topic) }

func granted(prefixes []string, topic string) bool {
	return len(prefixes) == 0 || slices.ContainsFunc(prefixes, func(p string) bool {
		return ValidateTopic(p) == nil && within(topic, p)
	})
}

// storeError maps a store failure onto an error kind. Messages name topics,
// never host paths.
func (f *front) storeError(req *request, err error) error {
	var tooLarge errTooLarge
	var queryTimeout errQueryTimeout
	var refused *errRefused
	var deny *errDenyRule
	what := fmt.Sprintf("topic %q", req.Topic)
	if req.Op == "list" {
		what = fmt.Sprintf("prefix %q", req.Prefix)
	}
	switch {
	case errors.As(err, &refused):
		return tool.Errorf(tool.KindDenied, "memory %s: %s refused: %v", req.Op, what, refused)
	case errors.As(err, &deny):
		return tool.Errorf(tool.KindDenied, "memory %s: %s refused: %v (config key security.deny; built-in rules cannot be lifted)", req.Op, what, deny)
	case errors.As(err, &queryTimeout):
		return tool.Errorf(tool.KindTimeout, "memory %s %q: %v", req.Op, req.Topic, queryTimeout)
	case errors.As(err, &tooLarge):
		return tool.Errorf(tool.KindInvalidArguments, "memory %s %q: %v", req.Op, req.Topic, tooLarge)
	case errors.Is(err, fs.ErrNotExist):
		return tool.Errorf(tool.KindNotFound, "memory %s: no topic %q", req.Op, req.Topic)
	case errors.Is(err, context.Canceled):
		return tool.Errorf(tool.KindCancelled, "memory %s %q: cancelled waiting for the store lock", req.Op, req.Topic)
	case errors.Is(err, context.DeadlineExceeded):
		return tool.Errorf(tool.KindTimeout, "memory %s %q: deadline passed waiting for the store lock", req.Op, req.Topic)
	}
	msg := f.backend.redact(err.Error())
	return tool.Errorf(tool.KindFailed, "memory %s %q: %s", req.Op, req.Topic, msg)
}

// The operations every backend shares: the deny rules and the value limit
// apply here, before the backend is asked.

func (f *front) get(ctx context.Context, topic string) ([]byte, bool, time.Time, error) {
	if err := f.checkDenied(topic); err != nil {
		return nil, false, time.Time{}, err
	}
	return f.backend.get(ctx, topic, f.maxValue)
}

func (f *front) put(ctx context.Context, topic string, value []byte, appending bool) (int, error) {
	if err := f.checkDenied(topic); err != nil {
		return 0, err
	}
	if len(value) > f.maxValue {
		return 0, errTooLarge{size: len(value), limit: f.maxValue}
	}
	return f.backend.put(ctx, topic, value, appending, f.maxValue)
}

func (f *front) remove(ctx context.Context, topic string) (bool, error) {
	if err := f.checkDenied(topic); err != nil {
		return false, err
	}
	return f.backend.remove(ctx, topic)
}

// list lists the topics within prefix that keep accepts; topics a deny rule
// covers are left out and counted.
func (f *front) list(ctx context.Context, prefix string, keep func(topic string) bool) ([]Entry, bool, Skipped, error) {
	return f.backend.list(ctx, prefix, func(topic string) verdict {
		switch {
		case !keep(topic):
			return hide
		case f.checkDenied(topic) != nil:
			return denied
		}
		return show
	})
}

// checkDenied applies the deny-list to where topic is stored in the file
// store (.warden/memories/<topic>.md), whichever backend stores it: a rule
// such as "**/secrets/**" means the same on both.
func (f *front) checkDenied(topic string) error {
	if f.guard == nil {
		return nil
	}
	t := pathguard.Target{Root: f.guard.Roots()[0], Rel: memoriesDir + "/" + fileName(topic)}
	if rule := f.guard.Denied(t); rule != nil {
		return &errDenyRule{path: t.Rel, rule: rule}
	}
	return nil
}
