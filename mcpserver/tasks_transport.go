package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/tool"
)

// taskTransport answers the task protocol's requests of a stdio
// connection (claimTask) before the go-sdk reads them, each on a goroutine
// of its own (tasks/result waits for its task to end), and hands the go-sdk
// everything else. It also remembers the protocol version the connection
// initialized with, which tells a 2025-11-25 session's task requests.
type taskTransport struct {
	mcp.Transport
	s *Server
}

func (t *taskTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil || t.s.opts.Tasks == nil {
		return c, err
	}
	return &taskConn{Connection: c, s: t.s, principal: principal.From(ctx)}, nil
}

type taskConn struct {
	mcp.Connection
	s         *Server
	principal principal.Principal

	mu      sync.Mutex
	version string // of the connection's initialize
	// features are the client features the initialize declared.
	features map[string]bool
	// asked are the requests of warden's task layer waiting for the
	// client's response, by id (requestIDPrefix and a count): the go-sdk
	// never sees those responses.
	asked  map[string]chan *jsonrpc.Response
	nextID int
	// notes are the status notifications waiting for the connection, the
	// newest per task (noteKeys keeps their order); writing says a
	// goroutine is writing them. A client that stops reading holds that
	// goroutine, never a task (notify).
	notes    map[string]*jsonrpc.Request
	noteKeys []string
	writing  bool
}

func (c *taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		if resp, ok := msg.(*jsonrpc.Response); ok && c.answered(resp) {
			continue
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return msg, nil
		}
		if req.Method == "initialize" {
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
				Capabilities    struct {
					Elicitation, Sampling, Roots json.RawMessage
				} `json:"capabilities"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				present := func(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
				c.mu.Lock()
				c.version = p.ProtocolVersion
				c.features = map[string]bool{
					tool.ClientElicit: present(p.Capabilities.Elicitation),
					tool.ClientSample: present(p.Capabilities.Sampling),
					tool.ClientRoots:  present(p.Capabilities.Roots),
				}
				c.mu.Unlock()
			}
			return msg, nil
		}
		c.mu.Lock()
		version, features := c.version, c.features
		c.mu.Unlock()
		claim := c.s.claimTask(req, taskContext{
			version: version, principal: c.principal, peer: c.s.tasks.peer, notify: c.notify,
			request: c.request, features: features,
		})
		if claim == nil {
			return msg, nil
		}
		go func() {
			r := claim(ctx)
			resp := &jsonrpc.Response{ID: req.ID}
			if r.err != nil {
				resp.Error = r.err
			} else if raw, err := json.Marshal(r.result); err != nil {
				resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the task reply: " + err.Error()}
			} else {
				resp.Result = raw
			}
			if err := c.Connection.Write(ctx, resp); err != nil {
				c.s.log.Debug("could not send a task reply", "error", err)
			}
		}()
	}
}

// requestIDPrefix begins the id of each request warden's task layer sends
// a stdio client: the go-sdk numbers its own requests, so a string id
// never collides with one of them.
const requestIDPrefix = "warden-task-"

// request sends the client a request of the server's own (a task's
// question, 2025-11-25) and returns its result, or the client's error, or
// ctx's.
func (c *taskConn) request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	c.mu.Lock()
	c.nextID++
	key := fmt.Sprintf("%s%d", requestIDPrefix, c.nextID)
	if c.asked == nil {
		c.asked = map[string]chan *jsonrpc.Response{}
	}
	ch := make(chan *jsonrpc.Response, 1)
	c.asked[key] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.asked, key)
		c.mu.Unlock()
	}()
	id, err := jsonrpc.MakeID(key)
	if err != nil {
		return nil, err
	}
	if err := c.Connection.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
		return nil, fmt.Errorf("sending %s: %w", method, err)
	}
	select {
	case resp := <-ch:
		if resp.Result != nil && resp.Error != nil {
			// Not a JSON-RPC response (exactly one of the two): refused,
			// as over HTTP (takeResponse), never taken as an answer.
			return nil, fmt.Errorf("the client's response to %s has both a result and an error", method)
		}
		if resp.Error != nil {
			return nil, resp.Error
		}
		return resp.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// answered delivers resp to the request of request's that waits for it,
// and reports whether there was one.
func (c *taskConn) answered(resp *jsonrpc.Response) bool {
	key, ok := resp.ID.Raw().(string)
	if !ok || !strings.HasPrefix(key, requestIDPrefix) {
		return false
	}
	c.mu.Lock()
	ch := c.asked[key]
	c.mu.Unlock()
	if ch != nil {
		select {
		case ch <- resp:
		default: // a second response to one request
		}
	}
	return true // a late answer to a request of ours is ours too
}

// maxPendingNotes bounds the status notifications a connection holds for
// a client that does not read them: past it, newer tasks' notifications
// are dropped (the client learns their status by tasks/get).
const maxPendingNotes = 64

// notify sends the client a notification (notifications/tasks/status)
// without waiting for it: the task's writer calls it, and a client that
// stops reading must not hold a task from ending. A notification waits
// while an earlier one is being written, and a newer one for the same
// task replaces it: the client needs only a task's latest status.
func (c *taskConn) notify(method string, params any) {
	raw, err := json.Marshal(params)
	if err != nil {
		return
	}
	var key struct {
		TaskID string `json:"taskId"`
	}
	json.Unmarshal(raw, &key)
	k := method + "\x00" + key.TaskID
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.notes == nil {
		c.notes = map[string]*jsonrpc.Request{}
	}
	if _, queued := c.notes[k]; !queued {
		if len(c.noteKeys) >= maxPendingNotes {
			c.s.log.Debug("task status notification dropped: the client is not reading", "task", key.TaskID)
			return
		}
		c.noteKeys = append(c.noteKeys, k)
	}
	c.notes[k] = &jsonrpc.Request{Method: method, Params: raw}
	if !c.writing {
		c.writing = true
		go c.writeNotes()
	}
}

// writeNotes writes the queued notifications until none is left.
func (c *taskConn) writeNotes() {
	for {
		c.mu.Lock()
		if len(c.noteKeys) == 0 {
			c.writing = false
			c.mu.Unlock()
			return
		}
		k := c.noteKeys[0]
		c.noteKeys = c.noteKeys[1:]
		note := c.notes[k]
		delete(c.notes, k)
		c.mu.Unlock()
		// The connection may have ended since the task started: the
		// client then polls (or has gone), and the write error says
		// nothing new.
		_ = c.Connection.Write(context.Background(), note)
	}
}

// routeTasks answers the task protocol's requests of HTTP clients
// (claimTask) and passes every other request on. It sits inside
// guardMessages, so a body reaching it is one checked message (or a
// batch, which it passes on) whose caller is authenticated.
func (s *Server) routeTasks(next http.Handler) http.Handler {
	if s.opts.Tasks == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			// A deleted session's questions wait no more, and a response
			// to one is not taken (httpAsks.endSession).
			next.ServeHTTP(w, r)
			if sid := r.Header.Get("Mcp-Session-Id"); sid != "" && !s.sessionLive(sid) {
				s.tasks.asks.endSession(sid)
			}
			return
		}
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		// A 2026-07-28 request names its method in a header (the go-sdk
		// checks it against the body): most are neither kind claimTask
		// takes, and pass without their body being read again.
		if m := r.Header.Get("Mcp-Method"); m != "" && m != MethodCallTool && !isTaskMethod(m) {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		// A body naming no task (nor any escaped character, \u, which
		// could spell one: "warden-\u0074ask-…") is none of the task
		// layer's, unless a tool requires task execution.
		if err != nil || !bytes.Contains(body, []byte("task")) && !bytes.Contains(body, []byte(`\u`)) && !s.tasks.anyRequired() {
			next.ServeHTTP(w, r)
			return
		}
		whole := trimSpace(body)
		if len(whole) == 0 || whole[0] != '{' {
			next.ServeHTTP(w, r)
			return
		}
		msg, err := decodeMessage(whole)
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		p, ok := principalOfInfo(auth.TokenInfoFromContext(r.Context()))
		if !ok {
			p = principal.Local // loopback without authentication
		}
		if resp, ok := isTaskLayerResponse(msg); ok {
			// A response to a task's question (tasks_http.go): the
			// go-sdk sent no request of that id.
			s.takeResponse(w, r, resp, p)
			return
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		out := &sseReply{w: w, session: r.Header.Get("Mcp-Session-Id")}
		tc := taskContext{
			version: r.Header.Get("Mcp-Protocol-Version"), fromHeader: true,
			principal: p, peer: s.httpTaskPeer(r.Header.Get("Mcp-Session-Id")),
		}
		if versionGeneration(tc.version) == genLegacy {
			tc.request, tc.features = s.httpAsker(r, p, out)
		}
		claim := s.claimTask(req, tc)
		if claim == nil {
			next.ServeHTTP(w, r)
			return
		}
		if herr := checkTaskHeaders(r.Header, req, s.tasks.headersOf); herr != nil {
			refuseHTTP(w, s.log, http.StatusBadRequest, &refusal{code: herr.Code, message: herr.Message, id: salvageID(whole)})
			return
		}
		reply := claim(r.Context())
		resp := &jsonrpc.Response{ID: req.ID}
		if reply.err != nil {
			resp.Error = reply.err
		} else if raw, err := json.Marshal(reply.result); err != nil {
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the task reply: " + err.Error()}
		} else {
			resp.Result = raw
		}
		out.reply(resp)
	})
}

// httpTaskPeer is the peer of an HTTP task request for tasks.OwnerOf: its
// session, when the go-sdk holds a session of that id, and otherwise none
// (tasks.UnlistedOwner for an unauthenticated request): an id the client
// made up is no key of its own, or inventing ids would escape the
// per-client bounds and give each a task list.
func (s *Server) httpTaskPeer(sessionID string) string {
	if s.sessionLive(sessionID) {
		return tasks.HTTPPeer(sessionID)
	}
	return tasks.HTTPPeer("")
}

// sessionLive says whether the go-sdk holds the HTTP session sessionID.
func (s *Server) sessionLive(sessionID string) bool {
	if sessionID == "" {
		return false
	}
	for ss := range s.sdk.Sessions() {
		if ss.ID() == sessionID {
			return true
		}
	}
	return false
}

// taskAdvertising is the receiving middleware that shows a task-aware
// client what the go-sdk cannot say: the tasks capability of a 2025-11-25
// initialize, the Tasks extension of a 2026-07-28 server/discover, and on
// a 2025-11-25 session each tool's execution.taskSupport in tools/list
// (2026-07-28 has no such field: the server decides per request).
func (s *Server) taskAdvertising(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || res == nil {
			return res, err
		}
		switch method {
		case "initialize":
			ir, ok := res.(*mcp.InitializeResult)
			if !ok {
				return res, err
			}
			switch {
			case ir.ProtocolVersion >= protocolMRTR:
				return &splicedResult{Result: res, splice: addExtension}, nil
			case ir.ProtocolVersion >= protocolLegacyTasks:
				return &splicedResult{Result: res, splice: addLegacyCapability}, nil
			}
		case "server/discover":
			return &splicedResult{Result: res, splice: addDiscoverExtension}, nil
		case "tools/list":
			if v := sessionVersion(req); v >= protocolLegacyTasks && v < protocolMRTR {
				return &splicedResult{Result: res, splice: s.addTaskSupport}, nil
			}
		}
		return res, err
	}
}

// sessionVersion is the protocol version of req's session.
func sessionVersion(req mcp.Request) string {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil {
		return ""
	}
	if p := ss.InitializeParams(); p != nil {
		return p.ProtocolVersion
	}
	return ""
}

// splicedResult is a go-sdk result with members added to its JSON: the
// go-sdk's types have no fields for tasks.
type splicedResult struct {
	mcp.Result
	splice func(map[string]json.RawMessage) error
}

func (r *splicedResult) MarshalJSON() ([]byte, error) {
	raw, err := json.Marshal(r.Result)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if err := r.splice(m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// editObject decodes m[key] as an object (a new one when absent), lets
// edit change it, and stores it back.
func editObject(m map[string]json.RawMessage, key string, edit func(map[string]json.RawMessage) error) error {
	obj := map[string]json.RawMessage{}
	if raw, ok := m[key]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &obj); err != nil {
			return err
		}
	}
	if err := edit(obj); err != nil {
		return err
	}
	raw, err := json.Marshal(obj)
	m[key] = raw
	return err
}

// addLegacyCapability declares the 2025-11-25 tasks capability: tasks/list,
// tasks/cancel and task-augmented tools/call.
func addLegacyCapability(m map[string]json.RawMessage) error {
	return editObject(m, "capabilities", func(caps map[string]json.RawMessage) error {
		caps["tasks"] = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)
		return nil
	})
}

// addExtension declares the 2026-07-28 Tasks extension.
func addExtension(m map[string]json.RawMessage) error {
	return editObject(m, "capabilities", func(caps map[string]json.RawMessage) error {
		return editObject(caps, "extensions", func(ext map[string]json.RawMessage) error {
			ext[ExtensionTasks] = json.RawMessage(`{}`)
			return nil
		})
	})
}

// addDiscoverExtension is addExtension for a server/discover result, which
// also says resultType "complete" (SEP-2322): the go-sdk sets that field
// after the middleware returns, through a method of its own result types
// that the splicedResult wrapping them does not have.
func addDiscoverExtension(m map[string]json.RawMessage) error {
	if _, ok := m["resultType"]; !ok {
		m["resultType"] = json.RawMessage(`"complete"`)
	}
	return addExtension(m)
}

// addTaskSupport sets each listed tool's execution.taskSupport.
func (s *Server) addTaskSupport(m map[string]json.RawMessage) error {
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(m["tools"], &list); err != nil {
		return err
	}
	for _, t := range list {
		var name string
		if json.Unmarshal(t["name"], &name) != nil {
			continue
		}
		support, ok := s.tasks.supportOf(name)
		if !ok {
			continue
		}
		if err := editObject(t, "execution", func(e map[string]json.RawMessage) error {
			e["taskSupport"], _ = json.Marshal(support)
			return nil
		}); err != nil {
			return err
		}
	}
	raw, err := json.Marshal(list)
	m["tools"] = raw
	return err
}

// checkTaskHeaders holds a 2026-07-28 request the task protocol answers to
// the standard headers (SEP-2243), as the go-sdk holds the requests it
// answers: Mcp-Method is the body's method, and Mcp-Name the tool a
// tools/call names or the task a tasks/* request names (SEP-2663, so that
// a load balancer routing by it sends the request where the task is).
// A tools/call's arguments also answer to the Mcp-Param-* headers of its
// tool's x-mcp-header properties (headersOf), as the go-sdk checks them.
// Earlier revisions have no such headers; but the header and the body's
// _meta must agree on the revision first (checkTaskVersion), so that a
// body cannot claim 2026-07-28 past a 2025-11-25 header.
func checkTaskHeaders(h http.Header, req *jsonrpc.Request, headersOf func(tool string) []paramHeader) *jsonrpc.Error {
	c, err := parseTaskCall(req.Params)
	if err != nil {
		return nil // answered as invalid params
	}
	if herr := checkTaskVersion(h, c); herr != nil {
		return herr
	}
	if h.Get("Mcp-Protocol-Version") < protocolMRTR {
		return nil
	}
	mismatch := func(format string, args ...any) *jsonrpc.Error {
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf(format, args...)}
	}
	if m := h.Get("Mcp-Method"); m != req.Method {
		return mismatch("header mismatch: Mcp-Method header value %q does not match body value %q", m, req.Method)
	}
	want := c.TaskID
	if req.Method == MethodCallTool {
		want = c.Name
	} else if req.Method == "tasks/list" || req.Method == "tasks/result" {
		return nil
	}
	if n := strings.TrimSpace(h.Get("Mcp-Name")); n != want {
		return mismatch("header mismatch: Mcp-Name header value %q does not match the body's %q", n, want)
	}
	if req.Method == MethodCallTool {
		if err := checkParamHeaders(h, req.Params, headersOf(c.Name)); err != nil {
			return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: err.Error()}
		}
	}
	return nil
}
