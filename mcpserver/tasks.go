package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkjson "github.com/segmentio/encoding/json"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/tool"
)

// MCP tasks, both generations (RATIONALE.md, "MCP tasks: the protocol"):
//
//   - 2025-11-25 (experimental, "legacy" here): the server declares the
//     tasks capability at initialize, tools/list shows each tool's
//     execution.taskSupport, a client asks for a task with params.task on
//     tools/call and follows it with tasks/get, tasks/result, tasks/list
//     and tasks/cancel;
//   - 2026-07-28 (the io.modelcontextprotocol/tasks extension, SEP-2663,
//     "modern" here): the client declares the extension in each request's
//     clientCapabilities, the server decides to answer a tools/call with a
//     task (resultType "task"), and the client follows it with tasks/get,
//     tasks/update and tasks/cancel.
//
// The go-sdk knows neither: it refuses tasks/* as unknown methods and drops
// params.task while decoding. So these requests are answered in front of
// it, on the transport (taskTransport for stdio, routeTasks for HTTP),
// where the raw request is still whole; the go-sdk only ever sees the
// requests that are not about tasks. What the go-sdk answers itself and a
// task-aware client must see differently (the capabilities, tools/list)
// is adjusted by a receiving middleware (taskAdvertising).

// ExtensionTasks is the identifier of the 2026-07-28 Tasks extension.
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// protocolLegacyTasks is the revision that introduced the experimental
// task-augmented requests.
const protocolLegacyTasks = "2025-11-25"

// metaRelatedTask is the _meta key tying a message to its task (2025-11-25).
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// TaskRunner runs the tools/call requests a client made tasks of, and
// keeps their records (Options.Tasks). Every method takes the owner key of
// the requesting principal (tasks.OwnerOf) and answers another owner's
// task exactly as one that does not exist (tasks.ErrNotFound).
type TaskRunner interface {
	// Start durably creates the task (tasks.Store.Create: it is never
	// returned before a tasks/get would find it) and runs start.Run in the
	// background. It returns the created record, or tasks.ErrTooMany
	// (wrapped, naming the bound and its config key) and others.
	Start(ctx context.Context, start TaskStart) (tasks.Task, error)
	// Get returns owner's task id.
	Get(ctx context.Context, owner, id string) (tasks.Task, error)
	// List returns a page of owner's tasks and the next page's cursor.
	List(ctx context.Context, owner, cursor string) ([]tasks.Task, string, error)
	// Cancel asks for owner's task id to stop and returns its record once
	// it has ended (cancelled, unless it ended first), or tasks.ErrTerminal
	// with the record when it had already ended.
	Cancel(ctx context.Context, owner, id string) (tasks.Task, error)
	// Await returns owner's task id once it has ended, or ctx's error.
	Await(ctx context.Context, owner, id string) (tasks.Task, error)
	// AwaitInput returns owner's task id once it has ended or asks for
	// input (input_required with requests not answered yet), or ctx's
	// error.
	AwaitInput(ctx context.Context, owner, id string) (tasks.Task, error)
	// AwaitAnswered returns owner's task id once its record no longer
	// waits for the answer to the request key (answered, given up, the
	// task ended), or ctx's error.
	AwaitAnswered(ctx context.Context, owner, id, key string) (tasks.Task, error)
	// Respond delivers a client's answers (tasks/update's inputResponses,
	// as the client sent them) to owner's task id, waiting for input:
	// tasks.Task.Answer, with CheckInputResponse as its check, applies in
	// one atomic update of the record (the kinds are checked against the
	// requests of the record it changes, never an earlier read), and the
	// call waiting for them is woken (on this replica at once, on another
	// at its next poll of the record). It returns the keys not taken, each
	// with the reason (tasks.Task.Answer), or CheckInputResponse's error
	// (a *jsonrpc.Error) with nothing taken.
	Respond(ctx context.Context, owner, id string, answers map[string]json.RawMessage) (ignored map[string]string, err error)
}

// TaskLink is what a task's call reaches of its task.
type TaskLink struct {
	// Status makes message the task's status line.
	Status func(message string)
	// Ask puts requests to the task's client through its record: the task
	// is input_required with them until every one is answered by
	// tasks/update (Respond), then working again, and Ask returns the
	// answers in order. It honours ctx (a cancel, the client_wait bound).
	// The keys the client sees are the runner's (a request's key and its
	// round: an answer is for one round alone); requests carries the
	// call's own keys, unique within the call.
	Ask func(ctx context.Context, requests []tasks.InputRequest) ([]json.RawMessage, error)
}

// TaskStart is a task the server asks a TaskRunner to start.
type TaskStart struct {
	// Owner is the owner key of the principal that asked (tasks.OwnerOf).
	Owner string
	// Tool is the tool the task calls.
	Tool string
	// TTL is the lifetime the client asked for; 0 means the runner's
	// default. The runner bounds it.
	TTL time.Duration
	// Run makes the call, through the server's door as a tools/call with
	// Call.Task set, and returns its CallToolResult as JSON. link's Status
	// hears each progress or status line of the call, its Ask the
	// questions of the call to its client. Run returns an error when the
	// call failed as a protocol error would (the tool no longer exists,
	// the guest crashed: TaskFailure): the task then ends failed with
	// that error's message.
	Run func(ctx context.Context, link TaskLink) (json.RawMessage, error)
	// Notify, when set, hears the record after every change the runner
	// makes, for notifications/tasks/status.
	Notify func(tasks.Task)
}

// taskState is what the server keeps for tasks: the task support of each
// tool, as the last resync listed it.
type taskState struct {
	mu      sync.RWMutex
	support map[string]string // tool name → tool.Task{Forbidden,Optional,Required}
	// headers are the x-mcp-header bindings of each tool's input schema,
	// which a 2026-07-28 HTTP task call is checked against (checkTaskHeaders).
	headers map[string][]paramHeader
	// required counts the tools that require task execution: while none
	// does, a tools/call that does not mention a task passes the
	// transport unparsed.
	required int
	// peer is the stdio client's peer name for tasks.OwnerOf: fixed for
	// the server's life (see OwnerOf).
	peer string
	// waiters counts each owner's tasks/result and tasks/cancel requests
	// waiting for a task to end (at most maxTaskWaiters).
	waitMu  sync.Mutex
	waiters map[string]int
	// asks are the requests sent to HTTP clients' tasks/result streams
	// (2025-11-25) that wait for a response (tasks_http.go).
	asks httpAsks
	// askers holds, by owner and task id, the channel closed when the
	// one tasks/result stream putting that task's questions to its
	// client stops asking (claimAsker).
	askMu  sync.Mutex
	askers map[string]chan struct{}
}

// claimAsker makes the calling tasks/result stream the one that puts
// owner's task id's questions to its client: two streams asking would put
// each question to the person twice, and the second answer would be lost.
// It returns the func that ends the claim, or, when another stream holds
// it, nil and the channel closed as that one stops.
func (ts *taskState) claimAsker(owner, id string) (release func(), busy <-chan struct{}) {
	k := owner + "\x00" + id
	ts.askMu.Lock()
	defer ts.askMu.Unlock()
	if ch, ok := ts.askers[k]; ok {
		return nil, ch
	}
	if ts.askers == nil {
		ts.askers = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	ts.askers[k] = ch
	return func() {
		ts.askMu.Lock()
		defer ts.askMu.Unlock()
		delete(ts.askers, k)
		close(ch)
	}, nil
}

// maxTaskWaiters bounds the tasks/result and tasks/cancel requests one
// client (owner) may have waiting at once: each holds a goroutine (and on
// stdio a reply slot) until its task ends, and a client may ask again.
const maxTaskWaiters = 32

func newTaskState() *taskState {
	return &taskState{support: map[string]string{}, peer: tasks.NewID(), waiters: map[string]int{}}
}

// wait counts a waiting request of owner; it returns false, counting
// nothing, when owner has maxTaskWaiters waiting already, and otherwise
// the function that ends the wait.
func (t *taskState) wait(owner string) (func(), bool) {
	t.waitMu.Lock()
	defer t.waitMu.Unlock()
	if t.waiters[owner] >= maxTaskWaiters {
		return nil, false
	}
	t.waiters[owner]++
	return func() {
		t.waitMu.Lock()
		defer t.waitMu.Unlock()
		if t.waiters[owner]--; t.waiters[owner] == 0 {
			delete(t.waiters, owner)
		}
	}, true
}

// noteTools records the task support of the tools a resync registered
// (those of ds in registered).
func (t *taskState) noteTools(ds []tool.Descriptor, registered map[string][]byte) {
	m := make(map[string]string, len(ds))
	headers := map[string][]paramHeader{}
	required := 0
	for i := range ds {
		if _, ok := registered[ds[i].Name]; !ok {
			continue
		}
		s := ds[i].TaskSupport()
		m[ds[i].Name] = s
		if b := paramHeadersOf(ds[i].InputSchema); len(b) > 0 {
			headers[ds[i].Name] = b
		}
		if s == tool.TaskRequired {
			required++
		}
	}
	t.mu.Lock()
	t.support, t.headers, t.required = m, headers, required
	t.mu.Unlock()
}

// headersOf returns the x-mcp-header bindings of tool name's input schema.
func (t *taskState) headersOf(name string) []paramHeader {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.headers[name]
}

func (t *taskState) supportOf(name string) (string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s, ok := t.support[name]
	return s, ok
}

func (t *taskState) anyRequired() bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.required > 0
}

// generation is the task protocol a request speaks.
type generation int

const (
	genNone   generation = iota // no tasks: the request is the go-sdk's
	genLegacy                   // 2025-11-25
	genModern                   // 2026-07-28 with the extension
)

// taskCall is the part of a request's params the task protocol reads. It
// is decoded exactly as the go-sdk decodes params (case-sensitive names),
// so that the name a task runs is the name the go-sdk would have read.
type taskCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Task      *struct {
		TTL *int64 `json:"ttl"`
	} `json:"task"`
	TaskID         string          `json:"taskId"`
	Cursor         string          `json:"cursor"`
	Meta           taskMeta        `json:"_meta"`
	InputResponses json.RawMessage `json:"inputResponses"`
	RequestState   string          `json:"requestState"`
}

// taskMeta is the part of a request's _meta the task protocol reads.
type taskMeta struct {
	ProtocolVersion    string `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities *struct {
		Extensions  map[string]json.RawMessage `json:"extensions"`
		Elicitation json.RawMessage            `json:"elicitation"`
		Sampling    json.RawMessage            `json:"sampling"`
		Roots       json.RawMessage            `json:"roots"`
	} `json:"io.modelcontextprotocol/clientCapabilities"`
}

// declared reports whether the request's clientCapabilities declare the
// Tasks extension.
func (c *taskCall) declared() bool {
	cc := c.Meta.ClientCapabilities
	if cc == nil {
		return false
	}
	_, ok := cc.Extensions[ExtensionTasks]
	return ok
}

// parseTaskCall decodes a request's params for the task protocol. Absent
// or null params decode to the zero taskCall.
func parseTaskCall(params json.RawMessage) (*taskCall, error) {
	c := new(taskCall)
	trimmed := trimSpace(params)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return c, nil
	}
	if trimmed[0] != '{' {
		return nil, fmt.Errorf("params must be an object, got %s", kindOf(trimmed[0]))
	}
	if err := checkTaskKeys(trimmed); err != nil {
		return nil, err
	}
	// The go-sdk's own decoder and flags: a name it would read is the
	// name the task runs (encoding/json would match "Name" too).
	if rest, err := sdkjson.Parse(trimmed, c, sdkParseFlags); err != nil {
		return nil, fmt.Errorf("params: %v", err)
	} else if len(trimSpace(rest)) != 0 {
		return nil, fmt.Errorf("params: trailing data after the object")
	}
	if c.Task != nil && c.Task.TTL != nil && *c.Task.TTL < 0 {
		return nil, fmt.Errorf("params.task.ttl %d is negative", *c.Task.TTL)
	}
	return c, nil
}

// errAmbiguousKey is parseTaskCall's refusal of params that name a member
// twice, or in another case than the protocol's: decoders disagree on
// which one counts (the last, the first, a case-insensitive match), and
// the scope check in front of the server must read what the task runs.
var errAmbiguousKey = errors.New("ambiguous params")

// taskKeys are the params members the task protocol reads.
var taskKeys = []string{"name", "arguments", "task", "taskId", "cursor", "_meta", "inputResponses", "requestState"}

// checkTaskKeys refuses an object whose top-level members repeat a name,
// or spell one of taskKeys in another case.
func checkTaskKeys(obj []byte) error {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // {
		return fmt.Errorf("params: %v", err)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("params: %v", err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return fmt.Errorf("%w: member %q appears twice", errAmbiguousKey, key)
		}
		seen[key] = true
		for _, k := range taskKeys {
			if key != k && strings.EqualFold(key, k) {
				return fmt.Errorf("%w: member %q is %q in another case", errAmbiguousKey, key, k)
			}
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return fmt.Errorf("params: %v", err)
		}
	}
	return nil
}

// isTaskMethod reports whether method is one of the task protocol's own.
func isTaskMethod(method string) bool { return strings.HasPrefix(method, "tasks/") }

// taskReply is the server's answer to a request it took from the go-sdk:
// a result or an error.
type taskReply struct {
	result any
	err    *jsonrpc.Error
}

func replyError(code int64, format string, args ...any) *taskReply {
	return &taskReply{err: &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// taskContext is what the transport knows of a request it hands to the
// task protocol.
type taskContext struct {
	// version is the session's protocol version (the stdio connection's
	// initialize, or an HTTP request's Mcp-Protocol-Version header).
	version string
	// principal is the caller; peer its peer for tasks.OwnerOf.
	principal principal.Principal
	peer      string
	// fromHeader says version is an HTTP request's Mcp-Protocol-Version
	// header: the request's generation is then the header's alone, and
	// the transport refuses a body whose _meta says another version
	// (checkTaskVersion) before the claim runs.
	fromHeader bool
	// notify, when set, sends a notification to this client (stdio).
	notify func(method string, params any)
	// request, when set, sends a request to this client and returns its
	// result (stdio): how a 2025-11-25 tasks/result puts a task's
	// questions to its client. features are the client features its
	// initialize declared.
	request  func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	features map[string]bool
}

// generationOf is the task protocol a request speaks: modern when it says
// 2026-07-28 or later in its _meta (every request of that revision does),
// legacy on a 2025-11-25 session, none otherwise (an older session, whose
// requests the go-sdk answers as it always has).
func generationOf(c *taskCall, version string) generation {
	if c.Meta.ProtocolVersion != "" {
		if c.Meta.ProtocolVersion >= protocolMRTR {
			return genModern
		}
		return genNone
	}
	return versionGeneration(version)
}

// versionGeneration is the task protocol of a session of version.
func versionGeneration(version string) generation {
	if version >= protocolMRTR {
		return genModern
	}
	if version >= protocolLegacyTasks {
		return genLegacy
	}
	return genNone
}

// claimTask decides whether req is the task protocol's: a tasks/*
// request, or a tools/call that makes or refuses a task. It returns nil
// for every request the go-sdk is to answer, and otherwise the function
// that answers it (which may wait: for a store, or for the task to end).
// The decision itself is cheap, and costs a tools/call that mentions no
// task no parse while no tool requires one.
func (s *Server) claimTask(req *jsonrpc.Request, tc taskContext) func(context.Context) *taskReply {
	if s.opts.Tasks == nil || !req.ID.IsValid() {
		return nil
	}
	switch {
	case req.Method == MethodCallTool:
		if !containsTask(req.Params) && !s.tasks.anyRequired() {
			return nil
		}
	case isTaskMethod(req.Method):
	default:
		return nil
	}
	c, err := parseTaskCall(req.Params)
	if err != nil {
		if req.Method == MethodCallTool && !errors.Is(err, errAmbiguousKey) {
			return nil // the go-sdk refuses it as it always has
		}
		return answerNow(replyError(jsonrpc.CodeInvalidParams, "invalid params: %v", err))
	}
	gen := generationOf(c, tc.version)
	if tc.fromHeader {
		gen = versionGeneration(tc.version)
	}
	owner := tasks.OwnerOf(tc.principal, tc.peer)
	if req.Method == MethodCallTool {
		if _, known := s.tasks.supportOf(c.Name); !known && asksTask(c, gen) {
			return func(ctx context.Context) *taskReply { return s.taskAfterLoads(ctx, c, gen, owner, tc) }
		}
		return s.taskCallTool(c, gen, owner, tc)
	}
	return func(ctx context.Context) *taskReply { return s.taskMethod(ctx, req.Method, c, gen, owner, tc) }
}

// asksTask reports whether a tools/call asks to be a task: params.task on
// 2025-11-25, the declared extension on 2026-07-28.
func asksTask(c *taskCall, gen generation) bool {
	return gen == genLegacy && c.Task != nil || gen == genModern && c.declared()
}

// loading reports whether modules are still loading in the background.
func (s *Server) loading() bool {
	return s.opts.Loader != nil && len(s.opts.Loader.Loading()) > 0
}

// taskAfterLoads answers a call that asks for a task of a tool not known
// yet (a client calling right after start): it applies a load that ended
// and waits for those still running as an ordinary call does (up to
// QueueWait), then decides.
func (s *Server) taskAfterLoads(ctx context.Context, c *taskCall, gen generation, owner string, tc taskContext) *taskReply {
	if s.stale() {
		// As whileLoading: only a load that ended unapplied is worth a
		// resync, or every call naming an unknown tool would cost one.
		s.resync()
	}
	if _, known := s.tasks.supportOf(c.Name); !known && s.loading() {
		wait, cancel := context.WithTimeout(ctx, s.opts.QueueWait)
		for {
			more := s.opts.Loader.AwaitLoad(wait)
			s.resync()
			if _, known := s.tasks.supportOf(c.Name); !more || known {
				break
			}
		}
		cancel()
	}
	if _, known := s.tasks.supportOf(c.Name); !known {
		return replyError(jsonrpc.CodeInvalidParams, "unknown tool %q", c.Name) // as the go-sdk says it
	}
	if claim := s.taskCallTool(c, gen, owner, tc); claim != nil {
		return claim(ctx)
	}
	// A tool that loaded meanwhile and runs only interactively: the
	// request has left the go-sdk's path, so the client sends it again.
	return replyError(codeServerBusy, "tool %q finished loading while this request waited, and it does not run as a task; send the call again", c.Name)
}

// answerNow is a claim answered at once.
func answerNow(r *taskReply) func(context.Context) *taskReply {
	return func(context.Context) *taskReply { return r }
}

// containsTask is the cheap test of a tools/call's params: does anything
// in it say "task" (params.task, the extension's name)?
func containsTask(params json.RawMessage) bool {
	return bytes.Contains(params, []byte("task"))
}

// taskCallTool answers a tools/call that must run as a task, or be refused
// for its task support; nil lets the go-sdk run it as an ordinary call.
func (s *Server) taskCallTool(c *taskCall, gen generation, owner string, tc taskContext) func(context.Context) *taskReply {
	support, known := s.tasks.supportOf(c.Name)
	if !known {
		return nil // unknown (or still loading): the go-sdk says so
	}
	switch gen {
	case genLegacy:
		switch {
		case c.Task != nil && support == tool.TaskForbidden:
			return answerNow(replyError(jsonrpc.CodeMethodNotFound,
				"tool %q does not support task-augmented execution (its execution.taskSupport is %q); call it without params.task", c.Name, support))
		case c.Task == nil && support == tool.TaskRequired:
			return answerNow(replyError(jsonrpc.CodeMethodNotFound,
				"tool %q requires task-augmented execution (its execution.taskSupport is %q); call it with params.task", c.Name, support))
		case c.Task == nil:
			return nil
		}
		var ttl time.Duration
		if c.Task.TTL != nil {
			ttl = time.Duration(min(*c.Task.TTL, int64(maxTTLMillis))) * time.Millisecond
		}
		return func(ctx context.Context) *taskReply { return s.startTask(ctx, c, gen, owner, ttl, tc) }
	case genModern:
		switch {
		case support == tool.TaskForbidden:
			return nil
		case !c.declared() && support == tool.TaskRequired:
			return answerNow(&taskReply{err: missingTasksExtension(fmt.Sprintf(
				"tool %q runs only as a task, and the request did not declare the %s extension", c.Name, ExtensionTasks))})
		case !c.declared():
			return nil
		case len(c.InputResponses) > 0 || c.RequestState != "":
			// A call that answers an input-required round stays
			// synchronous (SEP-2663: MRTR is resolved before a task).
			return nil
		}
		return func(ctx context.Context) *taskReply { return s.startTask(ctx, c, gen, owner, 0, tc) }
	}
	// An older session: a tool that requires a task cannot be called.
	if support == tool.TaskRequired {
		return answerNow(replyError(jsonrpc.CodeMethodNotFound,
			"tool %q runs only as a task, which this session's protocol version does not support (use %s or later)", c.Name, protocolLegacyTasks))
	}
	return nil
}

// maxTTLMillis bounds a client's ttl before it becomes a Duration (the
// runner bounds it again by config).
const maxTTLMillis = int64(365 * 24 * time.Hour / time.Millisecond)

// missingTasksExtension is the -32021 error of a modern request that needs
// the Tasks extension its client did not declare.
func missingTasksExtension(message string) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{
		"extensions": map[string]any{ExtensionTasks: map[string]any{}}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: message, Data: data}
}

// startTask creates the task and starts its call.
func (s *Server) startTask(ctx context.Context, c *taskCall, gen generation, owner string, ttl time.Duration, tc taskContext) *taskReply {
	name, args := c.Name, arguments(c.Arguments)
	client := &taskClient{s: s}
	switch {
	case gen == genModern:
		// The features the request that made the task declared: a
		// 2026-07-28 client declares them in every request's _meta.
		client.features = declaredFeatures(c)
	case tc.request != nil:
		// 2025-11-25 over a connection warden can send requests on
		// (stdio, an HTTP session): its tasks/result puts the questions
		// to the client.
		client.features = tc.features
	}
	start := TaskStart{
		Owner: owner, Tool: name, TTL: ttl,
		Run: func(runCtx context.Context, link TaskLink) (json.RawMessage, error) {
			client.link = link
			return s.runTaskCall(principal.With(runCtx, tc.principal), name, args, link.Status, client)
		},
	}
	if gen == genLegacy && tc.notify != nil {
		notify := tc.notify
		start.Notify = func(t tasks.Task) { notify("notifications/tasks/status", legacyTask(&t)) }
	}
	// The runner's audit lines and its call name the principal that asked.
	t, err := s.opts.Tasks.Start(principal.With(ctx, tc.principal), start)
	if err != nil {
		return taskFailure(err)
	}
	if gen == genLegacy {
		return &taskReply{result: map[string]any{"task": legacyTask(&t)}}
	}
	out := modernTask(&t)
	out["resultType"] = "task"
	return &taskReply{result: out}
}

// taskFailure maps a runner's error onto the protocol.
func taskFailure(err error) *taskReply {
	switch {
	case errors.Is(err, tasks.ErrNotFound), errors.Is(err, tasks.ErrBadID):
		return replyError(jsonrpc.CodeInvalidParams, "Failed to retrieve task: Task not found")
	case errors.Is(err, tasks.ErrBadCursor):
		return replyError(jsonrpc.CodeInvalidParams, "invalid params: %v", err)
	case errors.Is(err, tasks.ErrTooMany):
		return replyError(codeServerBusy, "%v", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return replyError(jsonrpc.CodeInternalError, "%v", err)
	}
	return replyError(jsonrpc.CodeInternalError, "task: %v", err)
}

// taskMethod answers tasks/get, tasks/result, tasks/list, tasks/update and
// tasks/cancel in the request's generation.
func (s *Server) taskMethod(ctx context.Context, method string, c *taskCall, gen generation, owner string, tc taskContext) *taskReply {
	if gen == genNone {
		return replyError(jsonrpc.CodeMethodNotFound,
			"%s: tasks need protocol version %s or later (with the tasks capability) or the %s extension", method, protocolLegacyTasks, ExtensionTasks)
	}
	// A method the generation does not have is not found, whatever its
	// params say: 2026-07-28 removed tasks/result and tasks/list, and
	// 2025-11-25 has no tasks/update. Checked before the params, as the
	// conformance suite's tasks-dispatch-and-envelope probes with an id
	// that is no task id of warden's.
	if !generationHas(gen, method) {
		return replyError(jsonrpc.CodeMethodNotFound, "method %q not found", method)
	}
	if gen == genModern && !c.declared() {
		return &taskReply{err: missingTasksExtension(fmt.Sprintf("%s needs the %s extension, which the request did not declare", method, ExtensionTasks))}
	}
	r := s.opts.Tasks
	if method == "tasks/result" && gen == genLegacy || method == "tasks/cancel" {
		done, ok := s.tasks.wait(owner)
		if !ok {
			return replyError(codeServerBusy, "%s: this client already has %d tasks/result and tasks/cancel requests waiting for tasks to end, the most it holds for one client; send it again once one is answered", method, maxTaskWaiters)
		}
		defer done()
	}
	var id string
	if method != "tasks/list" {
		var err error
		if id, err = tasks.ParseID(c.TaskID); err != nil {
			return replyError(jsonrpc.CodeInvalidParams, "Failed to retrieve task: Task not found")
		}
	}
	switch {
	case method == "tasks/get":
		t, err := r.Get(ctx, owner, id)
		if err != nil {
			return taskFailure(err)
		}
		if gen == genLegacy {
			return &taskReply{result: legacyTask(&t)}
		}
		return &taskReply{result: modernDetailed(&t)}
	case method == "tasks/cancel":
		t, err := r.Cancel(ctx, owner, id)
		if err != nil && !errors.Is(err, tasks.ErrTerminal) {
			return taskFailure(err)
		}
		if gen == genModern {
			// An acknowledgement, also for a task that had ended (SEP-2663).
			return &taskReply{result: map[string]any{"resultType": "complete"}}
		}
		if err != nil {
			return replyError(jsonrpc.CodeInvalidParams, "Cannot cancel task: already in terminal status '%s'", legacyStatus(&t))
		}
		return &taskReply{result: legacyTask(&t)}
	case method == "tasks/update":
		return s.taskUpdate(ctx, c, owner, id)
	case method == "tasks/result":
		return s.legacyResult(ctx, owner, id, tc)
	case method == "tasks/list":
		list, next, err := r.List(ctx, owner, c.Cursor)
		if err != nil {
			return taskFailure(err)
		}
		out := make([]map[string]any, len(list))
		for i := range list {
			out[i] = legacyTask(&list[i])
		}
		res := map[string]any{"tasks": out}
		if next != "" {
			res["nextCursor"] = next
		}
		return &taskReply{result: res}
	}
	return replyError(jsonrpc.CodeMethodNotFound, "method %q not found", method)
}

// generationHas reports whether method is a tasks/* method of generation
// gen (genLegacy or genModern).
func generationHas(gen generation, method string) bool {
	switch method {
	case "tasks/get", "tasks/cancel":
		return true
	case "tasks/result", "tasks/list":
		return gen == genLegacy
	case "tasks/update":
		return gen == genModern
	}
	return false
}

// legacyStatus is t's status as 2025-11-25 says it: a tool result with
// isError ends the task failed there (2026-07-28 keeps it completed).
func legacyStatus(t *tasks.Task) tasks.Status {
	if t.Status == tasks.Completed && resultIsError(t.Result) {
		return tasks.Failed
	}
	return shownStatus(t)
}

// shownStatus is the status a client is shown of t, in either generation:
// a task whose every request is answered, the answers not yet taken by its
// call (which goes on as soon as it reads them), asks nothing, so it is
// working, not input_required with no request to answer.
func shownStatus(t *tasks.Task) tasks.Status {
	if t.Status == tasks.InputRequired && len(t.Outstanding()) == 0 {
		return tasks.Working
	}
	return t.Status
}

func resultIsError(result json.RawMessage) bool {
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(result, &r) == nil && r.IsError
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// legacyTask renders t as a 2025-11-25 Task.
func legacyTask(t *tasks.Task) map[string]any {
	m := map[string]any{
		"taskId":        t.ID,
		"status":        legacyStatus(t),
		"createdAt":     stamp(t.Created),
		"lastUpdatedAt": stamp(t.Updated),
		"ttl":           t.TTL.Milliseconds(),
	}
	if t.StatusMessage != "" {
		m["statusMessage"] = t.StatusMessage
	}
	if t.PollInterval > 0 {
		m["pollInterval"] = t.PollInterval.Milliseconds()
	}
	return m
}

// legacyPayload is tasks/result's answer for an ended task: exactly what
// the tools/call would have answered, tied to the task by _meta.
func legacyPayload(t *tasks.Task) *taskReply {
	if len(t.Result) == 0 {
		msg := t.StatusMessage
		if msg == "" {
			msg = "the task ended " + string(t.Status) + " without a result"
		}
		return replyError(jsonrpc.CodeInternalError, "task %s %s: %s", t.ID, t.Status, msg)
	}
	// Members stay raw JSON: only _meta is rewritten, so a number in the
	// result (an integer past 2^53) reaches the client as the tool wrote it.
	var res map[string]json.RawMessage
	if err := json.Unmarshal(t.Result, &res); err != nil || res == nil {
		return replyError(jsonrpc.CodeInternalError, "task %s: its stored result is not an object: %v", t.ID, err)
	}
	if err := editObject(res, "_meta", func(meta map[string]json.RawMessage) error {
		meta[metaRelatedTask], _ = json.Marshal(map[string]string{"taskId": t.ID})
		return nil
	}); err != nil {
		return replyError(jsonrpc.CodeInternalError, "task %s: its stored result's _meta is not an object: %v", t.ID, err)
	}
	return &taskReply{result: res}
}

// modernTask renders t as a 2026-07-28 Task.
func modernTask(t *tasks.Task) map[string]any {
	m := map[string]any{
		"taskId":        t.ID,
		"status":        shownStatus(t),
		"createdAt":     stamp(t.Created),
		"lastUpdatedAt": stamp(t.Updated),
		"ttlMs":         t.TTL.Milliseconds(),
	}
	if t.StatusMessage != "" {
		m["statusMessage"] = t.StatusMessage
	}
	if t.PollInterval > 0 {
		m["pollIntervalMs"] = t.PollInterval.Milliseconds()
	}
	return m
}

// modernDetailed is tasks/get's 2026-07-28 answer: the task with the
// result of a completed one, or the JSON-RPC error of a failed one.
func modernDetailed(t *tasks.Task) map[string]any {
	m := modernTask(t)
	m["resultType"] = "complete"
	switch t.Status {
	case tasks.Completed:
		result := t.Result
		if len(result) == 0 {
			result = json.RawMessage(`{"content":[]}`)
		}
		m["result"] = result
	case tasks.Failed:
		msg := t.StatusMessage
		if msg == "" {
			msg = "the task failed"
		}
		m["error"] = map[string]any{"code": jsonrpc.CodeInternalError, "message": msg}
	case tasks.InputRequired:
		if reqs := pendingInput(t); reqs != nil {
			m["inputRequests"] = reqs
		}
	}
	return m
}

// runTaskCall makes a task's call: through the door, as the tools/call it
// is (scopes, rates, call slots), with Call.Task set so that the tool's
// task budgets apply, its progress becoming the task's status message.
// client is the task's (taskClient): a question of the call makes the
// task input_required. A call that crashes (TaskFailure) or that the door
// fails outside a tool's typed refusals ends the task failed.
func (s *Server) runTaskCall(ctx context.Context, name string, args json.RawMessage, status func(string), client tool.Client) (json.RawMessage, error) {
	var fail error
	d := &door[*mcp.CallToolResult]{
		method: MethodCallTool, name: name, what: name, subject: name, args: args,
		refused: func(r *tool.Result) (*mcp.CallToolResult, error) { return s.resultFor(name, r), nil },
		failed: func(err error) (*mcp.CallToolResult, error) {
			var te *tool.Error
			switch {
			case fail != nil: // the run's own (TaskFailure)
			case tool.KindOf(err) == tool.KindNotFound:
				fail = err
			case errors.As(err, &te) && TaskFailure(tool.ErrorResult(te)) == nil:
				// A typed failure of the door's own: a result, as on
				// an interactive call.
				return s.resultFor(name, tool.ErrorResult(te)), nil
			default:
				fail = err
			}
			return nil, fail
		},
	}
	res, err := enter(s, ctx, d, func(ctx context.Context, e entry) (*mcp.CallToolResult, error) {
		res, err := s.tools.Call(ctx, Call{
			Name:      name,
			Arguments: args,
			Observer:  StatusObserver(e.Observer, status),
			Client:    client,
			Pass:      e.Pass,
			Task:      true,
		})
		if err != nil {
			return nil, err
		}
		if res == nil {
			res = tool.ErrorResult(tool.Errorf(tool.KindInternal, "tool %s returned no result", name))
		}
		if err := TaskFailure(res); err != nil {
			fail = err
			return nil, err
		}
		return s.resultFor(name, res), nil
	})
	if fail != nil {
		return nil, fail
	}
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			return nil, fmt.Errorf("%s", je.Message)
		}
		return nil, err
	}
	return json.Marshal(res)
}

// StatusObserver returns an Observer that passes a task's call's reports
// on to o and makes each progress report the task's status line (its
// message, or "progress n of m").
func StatusObserver(o tool.Observer, status func(string)) tool.Observer {
	return &taskObserver{Observer: o, status: status}
}

type taskObserver struct {
	tool.Observer
	status func(string)
}

func (o *taskObserver) Progress(p tool.Progress) {
	msg := p.Message
	switch {
	case msg != "":
	case p.Total > 0:
		msg = fmt.Sprintf("progress %g of %g", p.Progress, p.Total)
	default:
		msg = fmt.Sprintf("progress %g", p.Progress)
	}
	o.status(msg)
	o.Observer.Progress(p)
}

// TaskFailure returns the error a task ends failed with when res is a
// failure of the call itself rather than a result of the tool's: the guest
// trapped (a panic, an unreachable, a stack overflow) or exited, or warden
// failed (tool.KindInternal). SEP-2663 keeps failed for such protocol-level
// failures and a tool's own error (isError from its typed error, a refusal,
// a budget it ran out of) completed with isError; RATIONALE.md, "input_required
// tasks". nil when res is a result.
func TaskFailure(res *tool.Result) error {
	if res == nil || !res.IsError || res.Error == nil {
		return nil
	}
	switch res.Error.Kind {
	case tool.KindTrapped, tool.KindGuestExit, tool.KindInternal:
		return res.Error
	}
	return nil
}

// taskClient is the tool.Client of a task's call. The request that made
// the task has been answered, so a question goes through the task's
// record (TaskLink.Ask): the task is input_required until the client
// answers, by tasks/update on 2026-07-28, or on 2025-11-25 through its
// tasks/result, which sends the questions to it (legacyResult: on the
// stdio connection, or an HTTP session's tasks/result stream).
type taskClient struct {
	s        *Server
	link     TaskLink
	features map[string]bool // declared by the request that made the task

	mu      sync.Mutex
	keyless int
}

// declaredFeatures are the client features a 2026-07-28 request declared
// in its _meta.
func declaredFeatures(c *taskCall) map[string]bool {
	cc := c.Meta.ClientCapabilities
	if cc == nil {
		return nil
	}
	present := func(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
	return map[string]bool{
		tool.ClientElicit: present(cc.Elicitation),
		tool.ClientSample: present(cc.Sampling),
		tool.ClientRoots:  present(cc.Roots),
	}
}

// Supports implements tool.Client.
func (c *taskClient) Supports(feature string) bool { return c.features[feature] && c.link.Ask != nil }

// Require implements tool.Client. A task has no request left to answer
// with MissingRequiredClientCapability: a feature the client lacks is the
// call's refusal alone.
func (c *taskClient) Require(feature string) bool { return c.Supports(feature) }

// Ask implements tool.Client: the requests become the task's input
// requests, and the call waits, parked in its host call, for every answer,
// at most tools.defaults.client_wait.
func (c *taskClient) Ask(ctx context.Context, requests []tool.ClientRequest) ([]json.RawMessage, error) {
	if c.link.Ask == nil {
		return nil, tool.Errorf(tool.KindUnsupported, "a call running as a task cannot ask the client: the request that started it has been answered")
	}
	c.mu.Lock()
	requests = nameRequests(requests, &c.keyless)
	c.mu.Unlock()
	reqs := make([]tasks.InputRequest, len(requests))
	seen := make(map[string]bool, len(requests))
	var what []string
	for i, r := range requests {
		if seen[r.Key] {
			return nil, tool.Errorf(tool.KindInvalidArguments, "client request key %q used twice in one ask", r.Key)
		}
		seen[r.Key] = true
		if _, err := inputRequests([]tool.ClientRequest{r}); err != nil {
			return nil, err
		}
		reqs[i] = tasks.InputRequest{Key: r.Key, Method: r.Method, Params: r.Params}
		what = append(what, fmt.Sprintf("%s %q", r.Method, r.Key))
	}
	wait := c.s.clientWait()
	askCtx, cancel := context.WithTimeoutCause(ctx, wait, hostfuncs.ErrClientWait)
	defer cancel()
	answers, err := c.link.Ask(askCtx, reqs)
	switch {
	case err == nil:
		for i, a := range answers {
			if e := clientErrorOf(a); e != nil {
				// As an interactive call's refusal (hostfuncs/client): the
				// client's words clipped and made terminal-safe.
				return nil, tool.Errorf(tool.KindFailed, "the client refused %s %q: error %d: %s",
					requests[i].Method, requests[i].Key, e.Code, termsafe.Line(e.Message))
			}
		}
		return answers, nil
	case ctx.Err() != nil:
		return nil, tool.Errorf(tool.KindCancelled, "the task ended while waiting for the client to answer %s", strings.Join(what, ", "))
	case askCtx.Err() != nil:
		return nil, tool.Errorf(tool.KindTimeout, "the client did not answer %s within %s (tools.defaults.client_wait)", strings.Join(what, ", "), wait)
	}
	var te *tool.Error
	switch {
	case errors.As(err, &te):
		return nil, te
	case errors.Is(err, tasks.ErrInput):
		// Past the bounds of one round (tasks.MaxInputRequests,
		// tasks.MaxInputBytes): the call's own doing.
		return nil, tool.Errorf(tool.KindInvalidArguments, "asking the client through the task: %v", err)
	}
	return nil, tool.Errorf(tool.KindUnavailable, "asking the client through the task: %v", err)
}

// pendingInput renders t's outstanding requests as a 2026-07-28
// inputRequests map (key → {method, params}), as an input-required result
// renders its own; nil when none can be rendered.
func pendingInput(t *tasks.Task) json.RawMessage {
	pending := t.Outstanding()
	if len(pending) == 0 {
		return nil
	}
	reqs := make([]tool.ClientRequest, len(pending))
	for i, r := range pending {
		reqs[i] = tool.ClientRequest{Key: r.Key, Method: r.Method, Params: r.Params}
	}
	m, err := inputRequests(reqs)
	if err != nil {
		return nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return raw
}

// taskUpdate answers a 2026-07-28 tasks/update: the inputResponses are
// checked (an object of at most tasks.MaxInputRequests members and
// tasks.MaxInputBytes, no member twice) and delivered to the task's call
// (TaskRunner.Respond), which takes an answer only for a request
// outstanding in the record it changes, and only a result of that
// request's method (CheckInputResponse, in the same atomic update: a
// task that starts asking while this update is on its way is checked as
// it asks). An answer of the wrong kind to an outstanding request refuses
// the update, -32602, nothing taken. An answer for a key that is not
// outstanding (never asked, an earlier round's, answered already, a task
// that asks nothing) is not taken and not checked: SEP-2663 has the
// server ignore it, and the acknowledgement names each such key and why
// under _meta[metaIgnoredInput]. Another principal's task is not found,
// as everywhere.
func (s *Server) taskUpdate(ctx context.Context, c *taskCall, owner, id string) *taskReply {
	answers, err := parseInputResponses(c.InputResponses)
	if err != nil {
		return replyError(jsonrpc.CodeInvalidParams, "invalid params: %v", err)
	}
	r := s.opts.Tasks
	ack := map[string]any{"resultType": "complete"}
	if len(answers) == 0 {
		// Nothing to deliver; the task must still be the principal's.
		if _, err := r.Get(ctx, owner, id); err != nil {
			return taskFailure(err)
		}
		return &taskReply{result: ack}
	}
	ignored, err := r.Respond(ctx, owner, id, answers)
	var refused *jsonrpc.Error
	switch {
	case errors.As(err, &refused):
		return &taskReply{err: refused}
	case err != nil:
		return taskFailure(err)
	}
	if len(ignored) > 0 {
		ack["_meta"] = map[string]any{metaIgnoredInput: ignored}
	}
	return &taskReply{result: ack}
}

// CheckInputResponse is the tasks.AnswerCheck of every answer a task
// takes (TaskRunner.Respond): answer must be a result of req's method (an
// elicitation's ElicitResult, a sampling request's CreateMessageResult, a
// roots listing's ListRootsResult); it is returned as that result
// encodes. A refusal is a *jsonrpc.Error, -32602, naming the key and the
// method.
func CheckInputResponse(req tasks.InputRequest, answer json.RawMessage) (json.RawMessage, error) {
	if e := clientErrorOf(answer); e != nil {
		return clientErrorAnswer(e), nil
	}
	var m mcp.InputResponseMap
	if !json.Valid(answer) || json.Unmarshal(fmt.Appendf(nil, `{"k":%s}`, answer), &m) != nil || m["k"] == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("invalid params: inputResponses[%q] is not a result of %s", req.Key, req.Method)}
	}
	if err := checkResponse(asked{Key: req.Key, Method: req.Method}, m["k"]); err != nil {
		return nil, err
	}
	out, err := json.Marshal(m["k"])
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("encoding inputResponses[%q]: %v", req.Key, err)}
	}
	return out, nil
}

// checkAnswers checks each answer to an outstanding request of t (asked,
// not answered yet) with CheckInputResponse (-32602 otherwise) and returns
// it as the result encodes. An answer for any other key passes unchanged:
// Respond leaves it untaken, or, should the key have become outstanding
// since t was read, checks it itself.
func checkAnswers(t *tasks.Task, answers map[string]json.RawMessage) (map[string]json.RawMessage, *taskReply) {
	checked := make(map[string]json.RawMessage, len(answers))
	for k, raw := range answers {
		checked[k] = raw
		var req *tasks.InputRequest
		for i := range t.InputRequests {
			if t.InputRequests[i].Key == k {
				req = &t.InputRequests[i]
			}
		}
		if req == nil || t.Status != tasks.InputRequired || t.InputResponses[k] != nil {
			continue // not taken: Respond says why
		}
		res, err := CheckInputResponse(*req, raw)
		if err != nil {
			return nil, &taskReply{err: err.(*jsonrpc.Error)}
		}
		checked[k] = res
	}
	return checked, nil
}

// legacyResult answers a 2025-11-25 tasks/result: it waits for the task
// to end and returns its payload. While the task asks for input, it sends
// each outstanding request to the client as a request of the server's own
// (on the stdio connection, or on the HTTP reply's SSE stream), tied to
// the task by _meta[metaRelatedTask], and delivers each answer as it comes
// (TaskRunner.Respond), as that revision has the requestor's tasks/result
// carry a task's questions. One stream asks a task's questions
// (claimAsker): another tasks/result of the task, on another session or
// the same, awaits the end alone, and asks only once that one stops. A
// request whose key leaves the record's outstanding set (answered by
// another way, given up by the call at its client_wait, the task ended),
// or that the client does not answer within tools.defaults.client_wait,
// is given up and the task awaited again. A request warden cannot send
// requests on (a sessionless HTTP request) only waits: its tasks' calls
// cannot ask.
func (s *Server) legacyResult(ctx context.Context, owner, id string, tc taskContext) *taskReply {
	r := s.opts.Tasks
	var release func()
	deaf := false // it left a question unanswered: it asks no more
	defer func() {
		if release != nil {
			release()
		}
	}()
	for {
		t, err := r.AwaitInput(ctx, owner, id)
		if err == nil && !t.Status.Terminal() && release == nil && (deaf || !canAsk(tc, &t)) {
			// This stream's client cannot be asked what the task asks (no
			// session to send on, or a feature its initialize did not
			// declare): it only awaits the end, leaving the questions to
			// a stream that can ask them.
			t, err = r.Await(ctx, owner, id)
		}
		if err == nil && !t.Status.Terminal() && release == nil {
			var busy <-chan struct{}
			if release, busy = s.tasks.claimAsker(owner, id); release == nil {
				// Another stream asks: await the end, or that stream's
				// stop, then ask here if questions remain.
				wait, stop := context.WithCancel(ctx)
				go func() {
					defer stop()
					select {
					case <-busy:
					case <-wait.Done():
					}
				}()
				t, err = r.Await(wait, owner, id)
				stop()
				if err != nil && ctx.Err() == nil {
					continue
				}
			}
		}
		if err != nil {
			return taskFailure(err)
		}
		if t.Status.Terminal() {
			return legacyPayload(&t)
		}
		if release == nil {
			continue // another stream asks, and the task did not end: impossible but harmless
		}
		reply := s.askOne(ctx, &t, owner, id, tc)
		if reply == errUnanswered {
			deaf = true
			release()
			release = nil
			continue
		}
		if reply != nil {
			return reply
		}
	}
}

// errUnanswered is askOne's word that its client left the question
// unanswered within client_wait (never sent to a client).
var errUnanswered = &taskReply{}

// canAsk says whether tc's client can be asked each of t's outstanding
// requests: warden can send it requests, and its initialize declared the
// feature each needs. A stream that cannot never takes the task's asker
// slot, so that one that can is asked (a person's answer is never a
// client's "method not found").
func canAsk(tc taskContext, t *tasks.Task) bool {
	if tc.request == nil {
		return false
	}
	for _, q := range t.Outstanding() {
		if !tc.features[tool.FeatureOf(q.Method)] {
			return false
		}
	}
	return true
}

// askOne sends the first of t's outstanding requests to the client and
// delivers its answer (TaskRunner.Respond). The request is given up, and
// nil returned, when its key leaves the record's outstanding set (the
// task was answered another way, its call gave the round up, the task
// ended) or no answer came within tools.defaults.client_wait; the reply
// tasks/result ends with is returned when the client answered with an
// error, its answer is not of the request's kind, or the request could not
// be sent.
func (s *Server) askOne(ctx context.Context, t *tasks.Task, owner, id string, tc taskContext) *taskReply {
	pending := t.Outstanding()
	if len(pending) == 0 {
		return nil
	}
	q := pending[0]
	round, stop := context.WithTimeout(ctx, s.clientWait())
	defer stop()
	left := make(chan tasks.Task, 1) // the record as the request left it
	go func() {
		// The request's leaving the record ends the wait for its answer.
		defer stop()
		if now, err := s.opts.Tasks.AwaitAnswered(round, owner, id, q.Key); err == nil {
			left <- now
		}
	}()
	params := map[string]json.RawMessage{}
	if len(q.Params) > 0 {
		if err := json.Unmarshal(q.Params, &params); err != nil {
			return replyError(jsonrpc.CodeInternalError, "task %s: the params of its request %q are not an object: %v", id, q.Key, err)
		}
	}
	if err := editObject(params, "_meta", func(meta map[string]json.RawMessage) error {
		meta[metaRelatedTask], _ = json.Marshal(map[string]string{"taskId": id})
		return nil
	}); err != nil {
		return replyError(jsonrpc.CodeInternalError, "task %s: the _meta of its request %q is not an object: %v", id, q.Key, err)
	}
	raw, _ := json.Marshal(params)
	res, err := tc.request(round, q.Method, raw)
	if err != nil && ctx.Err() == nil && round.Err() != nil {
		// Unanswered by this client: within client_wait, or before the
		// call gave the round up (the record asks nothing, no answer
		// taken for it). This stream asks no more (deaf), leaving the
		// task's questions to another stream of its owner. Answered
		// another way, or the task ended: the task is awaited again.
		if errors.Is(round.Err(), context.DeadlineExceeded) {
			return errUnanswered
		}
		select {
		case now := <-left:
			if !now.Status.Terminal() && now.Status != tasks.InputRequired && now.InputResponses[q.Key] == nil {
				return errUnanswered
			}
		default:
		}
		return nil
	}
	var clientErr *jsonrpc.Error
	if errors.As(err, &clientErr) && !protocolError(clientErr.Code) {
		// The client answered with an error: that is its answer, which
		// the call's Ask returns as the request's error.
		res, err = clientErrorAnswer(clientErr), nil
	}
	if err != nil {
		return replyError(jsonrpc.CodeInternalError, "task %s: the client did not answer its %s request %q: %v", id, q.Method, q.Key, err)
	}
	checked, refused := checkAnswers(t, map[string]json.RawMessage{q.Key: res})
	if refused != nil {
		return refused
	}
	if _, err := s.opts.Tasks.Respond(ctx, owner, id, checked); err != nil {
		return taskFailure(err)
	}
	return nil
}

// protocolError says whether a client's error code says it could not
// take the request at all (unparsable, invalid, a method or params it does
// not know): that is no answer of the person's, and ends the stream
// instead of answering the question.
func protocolError(code int64) bool {
	switch code {
	case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeMethodNotFound, jsonrpc.CodeInvalidParams:
		return true
	}
	return false
}

// metaClientError marks an answer that is the client's JSON-RPC error to
// a task's question (a 2025-11-25 tasks/result stream's request answered
// with an error): the record holds it as that request's answer, and the
// call's Ask returns it as that request's error, the guest's refusal.
// (A client may send one by tasks/update as well: it refuses its own
// question, as declining does.)
const metaClientError = tool.ReservedPrefix + "clientError"

// clientErrorAnswer is the answer recording the client's error e.
func clientErrorAnswer(e *jsonrpc.Error) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{"_meta": map[string]any{
		metaClientError: map[string]any{"code": e.Code, "message": e.Message}}})
	return raw
}

// clientErrorOf returns the client's error an answer records
// (clientErrorAnswer), nil for any other answer.
func clientErrorOf(answer json.RawMessage) *jsonrpc.Error {
	var a struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(answer, &a) != nil || a.Meta[metaClientError] == nil {
		return nil
	}
	var e struct {
		Code    *int64  `json:"code"`
		Message *string `json:"message"`
	}
	if json.Unmarshal(a.Meta[metaClientError], &e) != nil || e.Code == nil || e.Message == nil {
		return nil
	}
	return &jsonrpc.Error{Code: *e.Code, Message: *e.Message}
}

// metaIgnoredInput is the _meta key of a tasks/update acknowledgement
// naming the inputResponses not taken, each with the reason.
const metaIgnoredInput = tool.ReservedPrefix + "ignoredInputResponses"

// parseInputResponses decodes tasks/update's inputResponses: an object
// (absent is refused: tasks/update has nothing else to say), no member
// twice, within the bounds of one round.
func parseInputResponses(raw json.RawMessage) (map[string]json.RawMessage, error) {
	raw = trimSpace(raw)
	if len(raw) == 0 {
		return nil, fmt.Errorf("tasks/update needs inputResponses")
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("inputResponses must be an object, got %s", kindOf(raw[0]))
	}
	if len(raw) > tasks.MaxInputBytes {
		return nil, fmt.Errorf("inputResponses of %d bytes, more than the %d a task holds", len(raw), tasks.MaxInputBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("inputResponses: %v", err)
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("inputResponses: %v", err)
		}
		key, _ := tok.(string)
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%w: inputResponses member %q appears twice", errAmbiguousKey, key)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("inputResponses: %v", err)
		}
		if len(out) == tasks.MaxInputRequests {
			return nil, fmt.Errorf("inputResponses has more than %d members, the most a task asks at once", tasks.MaxInputRequests)
		}
		out[key] = v
	}
	return out, nil
}
