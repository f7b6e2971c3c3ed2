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
//     otherwise), and the server's handler chain is known.

// fastTransport puts a fastConnection over the connection of its
// Transport; the session it serves is set once the go-sdk has connected.
type fastTransport struct {
	mcp.Transport
	s    *Server
	conn atomic.Pointer[fastConnection]
	// taken counts the calls answered on the fast path (for tests).
	taken atomic.Int64
}

func (t *fastTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	base, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	fc := &fastConnection{Connection: c, s: t.s, taken: &t.taken, base: base, stop: stop, calls: make(map[jsonrpc.ID]context.CancelCauseFunc)}
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
	session atomic.Pointer[mcp.ServerSession]
	// base is the context of the fast calls: like the go-sdk's request
	// contexts on stdio, it does not end with the serving context, only
	// when the input ends (after the calls drained) or the connection
	// closes.
	base context.Context
	stop context.CancelCauseFunc

	mu     sync.Mutex
	calls  map[jsonrpc.ID]context.CancelCauseFunc // fast calls not answered yet
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
		if !c.take(req) {
			return msg, nil
		}
	}
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
	if ss == nil || handler == nil || ss.InitializeParams() == nil {
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
	go c.run(ctx, cancel, handler, req.ID, &mcp.CallToolRequest{Session: ss, Params: params})
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
func (c *fastConnection) drain() {
	done := make(chan struct{})
	go func() {
		c.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(maxDrain):
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
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-ended
		err = ctx.Err()
	case err = <-ended:
	}
	return served(ctx, err)
}
