package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkjson "github.com/segmentio/encoding/json"
)

// The stdio fast path (RATIONALE.md, "The stdio fast path"). The go-sdk
// serves every request through its generic machinery: a request queue, a
// goroutine to drain it and one per request, the request's `_meta` and
// params each decoded with a fresh 32 KiB buffer, the result encoded and
// compacted. For the hottest request of a stdio session, a plain
// tools/call, fastConnection does what that machinery does for it and
// nothing else, and hands it to the very handler chain the go-sdk would
// call (the server's receiving middlewares, warden's and the go-sdk's, down
// to the go-sdk's own tools/call): so the tool, the checks and the reply's
// bytes are the go-sdk's, and only the dispatch around them is not.
// FuzzFastPathDifferential holds the two paths to byte-equal replies and
// the same tool calls for every request shape the fuzzers make.
//
// A request takes the fast path only when all of these hold; any other
// goes to the go-sdk untouched:
//   - it is a tools/call with an id;
//   - its params are an object of exactly two members, "name" (a string)
//     and "arguments" (an object), each once and spelled without escapes:
//     no `_meta` (so the go-sdk would serve it under the session's
//     protocol, not the stateless one, and no progress token), no task,
//     no input responses or request state;
//   - the session has been initialized (the go-sdk refuses the call
//     otherwise) and the initialize reply has been written (so no reply
//     overtakes it: the go-sdk sets the session's params before it writes
//     that reply), and the server's handler chain is known;
//   - the session is not shutting down (from then on the go-sdk refuses
//     new calls, and its Close waits only for the calls it counts).

// fastTransport puts a fastConnection over the connection of its
// Transport; the session it serves is set once the go-sdk has connected.
type fastTransport struct {
	mcp.Transport
	s    *Server
	conn atomic.Pointer[fastConnection]
	// taken counts the calls answered on the fast path (for tests).
	taken atomic.Int64
	hooks fastHooks
}

// fastHooks are the points the tests drive the fast path at; each is nil
// outside tests.
type fastHooks struct {
	// seen is called with each tools/call read, and whether the fast path
	// took it.
	seen func(req *jsonrpc.Request, taken bool)
	// shutdown is called once no fast call can start any more, before the
	// go-sdk's Close.
	shutdown func()
	// awaiting is called when the connection begins to wait for its fast
	// calls still running (at the end of its input, or of the session).
	awaiting func()
	// initialized is called once the initialize reply has been written:
	// from then on plain calls take the fast path.
	initialized func()
}

func (t *fastTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	base, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	fc := &fastConnection{Connection: c, s: t.s, taken: &t.taken, hooks: t.hooks, base: base, stop: stop, calls: make(map[jsonrpc.ID]context.CancelCauseFunc)}
	t.conn.Store(fc)
	return fc, nil
}

// serve sets the session the connection's fast calls run in.
func (t *fastTransport) serve(ss *mcp.ServerSession) {
	if c := t.conn.Load(); c != nil {
		c.session.Store(ss)
	}
}

// fastConnection answers plain tools/calls itself (see above) and passes
// every other message on to the go-sdk.
type fastConnection struct {
	mcp.Connection
	s       *Server
	taken   *atomic.Int64
	hooks   fastHooks
	session atomic.Pointer[mcp.ServerSession]
	// initialized is set once the reply to the session's first initialize
	// request, whose id is initID (guarded by mu), has been written without
	// an error.
	initialized atomic.Bool
	// base is the context of the fast calls: like the go-sdk's request
	// contexts on stdio, it does not end with the serving context, only
	// when the input ends (after the calls drained) or the connection
	// closes.
	base context.Context
	stop context.CancelCauseFunc

	mu     sync.Mutex
	calls  map[jsonrpc.ID]context.CancelCauseFunc // fast calls not answered yet
	initID jsonrpc.ID
	// closed is set when the session begins to shut down (before the
	// go-sdk's Close) or the connection closes: no call starts after it.
	closed bool
	wg     sync.WaitGroup
}

// Read implements [mcp.Connection]: the next message for the go-sdk.
func (c *fastConnection) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				c.drain()
			}
			// As the go-sdk ends its requests when its reading ends.
			c.stop(err)
			return nil, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return msg, nil
		}
		if !req.ID.IsValid() {
			if req.Method == notificationCancelled {
				c.cancelled(req.Params)
			}
			return msg, nil
		}
		if req.Method == methodInitialize && !c.initialized.Load() {
			c.mu.Lock()
			if !c.initID.IsValid() {
				c.initID = req.ID
			}
			c.mu.Unlock()
		}
		taken := c.take(req)
		if c.hooks.seen != nil && req.Method == MethodCallTool {
			c.hooks.seen(req, taken)
		}
		if !taken {
			return msg, nil
		}
	}
}

// methodInitialize is the MCP request that opens a session.
const methodInitialize = "initialize"

// Write implements [mcp.Connection]: it notes when the reply to the
// session's initialize has been written, after which the fast path may
// answer calls without overtaking it.
func (c *fastConnection) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok && !c.initialized.Load() {
		c.mu.Lock()
		if c.initID.IsValid() && resp.ID == c.initID {
			if err == nil && resp.Error == nil {
				c.initialized.Store(true)
				if c.hooks.initialized != nil {
					c.hooks.initialized()
				}
			} else {
				c.initID = jsonrpc.ID{} // refused: the next initialize counts
			}
		}
		c.mu.Unlock()
	}
	return err
}

// notificationCancelled is the MCP notification that cancels a request.
const notificationCancelled = "notifications/cancelled"

// cancelled cancels the fast call a notifications/cancelled names, as the
// go-sdk's canceller does its own (the notification goes on to the go-sdk,
// which finds no call of its own under that id).
func (c *fastConnection) cancelled(params json.RawMessage) {
	var p mcp.CancelledParams
	if rest, err := sdkjson.Parse(params, &p, sdkParseFlags); err != nil || len(bytes.TrimSpace(rest)) != 0 {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	c.mu.Lock()
	cancel := c.calls[id]
	c.mu.Unlock()
	if cancel != nil {
		cancel(nil)
	}
}

// take starts req on the fast path and reports true, or reports false when
// req is for the go-sdk.
func (c *fastConnection) take(req *jsonrpc.Request) bool {
	if req.Method != MethodCallTool {
		return false
	}
	if c.s.opts.Tasks != nil && c.s.tasks.anyRequired() {
		// A tool requires tasks: the task protocol (taskTransport, which
		// reads after this) must see every call to refuse a plain one.
		return false
	}
	ss := c.session.Load()
	handler := c.s.chain
	if ss == nil || handler == nil || !c.initialized.Load() || ss.InitializeParams() == nil {
		return false
	}
	params, ok := plainCallParams(req.Params)
	if !ok {
		return false
	}
	ctx, cancel := context.WithCancelCause(c.base)
	c.mu.Lock()
	if c.closed || c.base.Err() != nil {
		c.mu.Unlock()
		cancel(nil)
		return false
	}
	c.calls[req.ID] = cancel
	c.wg.Add(1)
	c.mu.Unlock()
	c.taken.Add(1)
	call := &mcp.CallToolRequest{Session: ss, Params: params}
	// The call runs on a warm stack (warmstack.go), as the chain would run
	// it, but handed there from here: its own goroutine, then a worker,
	// were two hand-offs a call.
	if inner := c.s.warmChain; inner == nil || !c.s.warm.start(func() { c.run(ctx, cancel, inner, req.ID, call) }) {
		go c.run(ctx, cancel, handler, req.ID, call)
	}
	return true
}

// run calls the handler chain, and writes the reply as the go-sdk's
// jsonrpc2 layer does (processResult in go-sdk v1.8.0): the call leaves
// the in-flight set, then its response is written, result or error.
func (c *fastConnection) run(ctx context.Context, cancel context.CancelCauseFunc, handler mcp.MethodHandler, id jsonrpc.ID, req *mcp.CallToolRequest) {
	defer c.wg.Done()
	defer cancel(nil)
	res, err := handler(ctx, MethodCallTool, req)
	if res != nil && err != nil {
		res = nil // the go-sdk answers the error
	}
	if res == nil && err == nil {
		// Unreachable for the server's chain (the tool handler and the go-sdk
		// answer every call); the go-sdk would log and answer an internal error.
		c.s.log.Error("a tools/call returned neither a result nor an error")
		err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error: the call returned no result"}
	}
	resp := &jsonrpc.Response{ID: id, Error: err}
	if err == nil {
		raw, merr := encodeAsSDK(res)
		if merr != nil {
			// The go-sdk sends nothing for a result it cannot encode;
			// encodableReplies sees that this does not happen.
			c.s.log.Error("the result of a tools/call could not be encoded", "problem", merr.Error())
			c.forget(id)
			return
		}
		resp.Result = raw
	}
	c.forget(id)
	if werr := c.Connection.Write(context.WithoutCancel(ctx), resp); werr != nil && !errors.Is(werr, errRejected) {
		// As the go-sdk does on a failed write: the writer is broken, so
		// every call in flight ends.
		c.stop(fmt.Errorf("%w: %v", errConnectionClosing, werr))
	}
}

// errConnectionClosing is the cause of the calls ended by a failed write.
var errConnectionClosing = errors.New("server is closing")

func (c *fastConnection) forget(id jsonrpc.ID) {
	c.mu.Lock()
	delete(c.calls, id)
	c.mu.Unlock()
}

// drain waits, at most maxDrain, for the fast calls to be answered: a
// client that writes its requests and closes stdin still gets every reply
// (drainTransport does the same for the go-sdk's requests).
func (c *fastConnection) drain() { c.await(maxDrain) }

// shutdown starts no fast call from now on: the requests read after it go
// to the go-sdk, which refuses the calls once its Close has begun.
func (c *fastConnection) shutdown() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	if c.hooks.shutdown != nil {
		c.hooks.shutdown()
	}
}

// await waits, at most bound, for the fast calls still running to return:
// the session's end tears down what they run on. Once the connection has
// closed they are cancelled, so bound only holds off a call that does not
// heed its cancellation.
func (c *fastConnection) await(bound time.Duration) {
	if c.hooks.awaiting != nil {
		c.hooks.awaiting()
	}
	done := make(chan struct{})
	go func() {
		c.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		c.s.log.Warn("stopped waiting for fast-path tool calls still running", "waited", bound.String())
	}
}

// Close implements [mcp.Connection]: fast calls still running end, as the
// go-sdk's do when their connection closes.
func (c *fastConnection) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.stop(io.ErrClosedPipe)
	return c.Connection.Close()
}

// plainCallParams decodes the params of a plain tools/call (see above)
// as the go-sdk decodes them, or reports false for any other params.
func plainCallParams(raw json.RawMessage) (*mcp.CallToolParamsRaw, bool) {
	data := bytes.TrimSpace(raw)
	if len(data) == 0 || data[0] != '{' {
		return nil, false
	}
	var name, args bool
	i := 1
	for {
		i = skipSpace(data, i)
		if i < len(data) && data[i] == '}' && !name && !args {
			return nil, false // {}: no name
		}
		if i >= len(data) || data[i] != '"' {
			return nil, false
		}
		end, ok := skipValue(data, i)
		if !ok {
			return nil, false
		}
		key := data[i:end]
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return nil, false
		}
		i = skipSpace(data, i+1)
		if i >= len(data) {
			return nil, false
		}
		first := data[i]
		if end, ok = skipValue(data, i); !ok {
			return nil, false
		}
		switch string(key) {
		case `"name"`:
			if name || first != '"' {
				return nil, false
			}
			name = true
		case `"arguments"`:
			if args || first != '{' {
				return nil, false
			}
			args = true
		default:
			return nil, false
		}
		i = skipSpace(data, end)
		if i < len(data) && data[i] == ',' {
			i++
			continue
		}
		if i >= len(data) || data[i] != '}' || skipSpace(data, i+1) != len(data) || !name || !args {
			return nil, false
		}
		break
	}
	var p mcp.CallToolParamsRaw
	if rest, err := sdkjson.Parse(data, &p, sdkParseFlags); err != nil || len(bytes.TrimSpace(rest)) != 0 {
		return nil, false
	}
	return &p, true
}

// serveFast is Serve over t, whose fastTransport ft learns the session
// once the go-sdk has connected it.
func (s *Server) serveFast(ctx context.Context, t mcp.Transport, ft *fastTransport) error {
	id := fmt.Sprintf("conn-%d", s.connections.Add(1))
	ss, err := s.sdk.Connect(ctx, &sessionTransport{Transport: t, id: id}, nil)
	if err != nil {
		return served(ctx, err)
	}
	ft.serve(ss)
	fc := ft.conn.Load()
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case <-ctx.Done():
		// No fast call starts once the go-sdk's Close has begun: its Close
		// waits for the calls it counts, and refuses new ones, while the
		// fast calls are outside its count.
		fc.shutdown()
		ss.Close()
		<-ended
		err = ctx.Err()
	case err = <-ended:
	}
	// The connection has closed, so the fast calls still running are
	// cancelled; the caller tears down what they run on once Serve
	// returns, so wait for them (bounded) as the go-sdk's Close waits for
	// its own.
	fc.await(maxCallsAtClose)
	return served(ctx, err)
}

// maxCallsAtClose bounds how long a session that has ended waits for its
// cancelled fast calls: a tool call ends at its next fuel check or host
// call once cancelled, so only a stuck host would reach it.
const maxCallsAtClose = maxDrain
