package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/tool"
)

// A 2025-11-25 task's questions over streamable HTTP: the requestor's
// tasks/result is answered as an SSE stream, which carries each
// outstanding request as a request of the server's own (legacyResult), and
// the client POSTs its responses, which routeTasks takes before the go-sdk
// (httpAsks.deliver). RATIONALE.md, "input_required tasks, second part".

// maxAsksPerSession bounds the requests of warden's task layer a session
// has outstanding at once: each tasks/result stream has at most one (the
// questions are sent one at a time), and a session holds at most this
// many such streams asking.
const maxAsksPerSession = 8

// errSessionGone ends a question whose session its client deleted.
var errSessionGone = errors.New("the session was deleted")

// errTooManyAsks refuses a request past maxAsksPerSession.
var errTooManyAsks = errors.New("too many questions outstanding in this session")

// httpAsks are the requests sent to HTTP clients' tasks/result streams that
// wait for a response, by id. A response is taken only from the session
// and the principal the request was sent to, once.
type httpAsks struct {
	mu        sync.Mutex
	next      uint64
	byID      map[string]*pendingAsk
	bySession map[string]int
}

type pendingAsk struct {
	session string
	who     principal.Principal
	reply   chan *jsonrpc.Response // holds one
	gone    chan struct{}          // closed when its session is deleted (endSession)
}

// open registers a request of session's principal who and returns its
// id, the channel its response arrives on, and the func that forgets it.
func (a *httpAsks) open(session string, who principal.Principal) (string, <-chan *jsonrpc.Response, func(), error) {
	key, ask, forget, err := a.openAsk(session, who)
	if err != nil {
		return "", nil, nil, err
	}
	return key, ask.reply, forget, nil
}

// openAsk is open, returning the request itself (its gone channel too).
func (a *httpAsks) openAsk(session string, who principal.Principal) (string, *pendingAsk, func(), error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.bySession[session] >= maxAsksPerSession {
		return "", nil, nil, fmt.Errorf("%w (at most %d)", errTooManyAsks, maxAsksPerSession)
	}
	if a.byID == nil {
		a.byID, a.bySession = map[string]*pendingAsk{}, map[string]int{}
	}
	a.next++
	key := fmt.Sprintf("%shttp-%d", requestIDPrefix, a.next)
	ask := &pendingAsk{session: session, who: who, reply: make(chan *jsonrpc.Response, 1), gone: make(chan struct{})}
	a.byID[key] = ask
	a.bySession[session]++
	return key, ask, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.byID[key] == ask {
			delete(a.byID, key)
		}
		if a.bySession[session]--; a.bySession[session] <= 0 {
			delete(a.bySession, session)
		}
	}, nil
}

// deliver hands resp to the request it answers when that request waits
// and was sent to session and who, and reports whether it did. The request
// then waits no more: a second response to it is not taken.
func (a *httpAsks) deliver(session string, who principal.Principal, resp *jsonrpc.Response) bool {
	key, ok := resp.ID.Raw().(string)
	if !ok || session == "" {
		return false
	}
	a.mu.Lock()
	ask := a.byID[key]
	if ask == nil || ask.session != session || !samePrincipal(ask.who, who) {
		a.mu.Unlock()
		return false
	}
	delete(a.byID, key)
	a.mu.Unlock()
	ask.reply <- resp // the only send: the entry is gone
	return true
}

// endSession ends the requests sent on session, deleted by its client:
// each waits no more (its gone channel is closed, which ends its
// tasks/result stream's asking), and a response to one is not taken.
func (a *httpAsks) endSession(session string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, ask := range a.byID {
		if ask.session == session {
			delete(a.byID, key)
			close(ask.gone)
		}
	}
}

// samePrincipal says whether a and b are one caller, as task ownership
// (tasks.OwnerOf) tells callers apart.
func samePrincipal(a, b principal.Principal) bool {
	return a.Subject == b.Subject && a.Via == b.Via && a.Issuer == b.Issuer
}

// isTaskLayerResponse says whether msg is a response to an id of warden's
// task layer (requestIDPrefix): the go-sdk never sees one.
func isTaskLayerResponse(msg jsonrpc.Message) (*jsonrpc.Response, bool) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return nil, false
	}
	key, ok := resp.ID.Raw().(string)
	return resp, ok && strings.HasPrefix(key, requestIDPrefix)
}

// takeResponse answers the POST of a response to a request of warden's
// task layer: 202 when it is taken; otherwise 400 with a JSON-RPC error
// without an id, the same whether the id was never sent, was another
// session's or principal's, was answered already or its task has ended,
// so that the refusal tells nothing of other sessions.
func (s *Server) takeResponse(w http.ResponseWriter, r *http.Request, resp *jsonrpc.Response, who principal.Principal) {
	sid := r.Header.Get("Mcp-Session-Id")
	if resp.Result != nil && resp.Error != nil {
		refuseHTTP(w, s.log, http.StatusBadRequest, invalidRequest(nil,
			"a response with both a result and an error"))
		return
	}
	if len(resp.Result) > tasks.MaxInputBytes {
		refuseHTTP(w, s.log, http.StatusBadRequest, invalidRequest(nil,
			"a response of %d bytes, more than the %d a task's answers hold", len(resp.Result), tasks.MaxInputBytes))
		return
	}
	if !s.tasks.asks.deliver(sid, who, resp) {
		refuseHTTP(w, s.log, http.StatusBadRequest, invalidRequest(nil,
			"no request of this session waits for a response with id %s", clip(rawID(resp.ID))))
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func rawID(id jsonrpc.ID) []byte {
	raw, _ := json.Marshal(id.Raw())
	return raw
}

// sseReply is the reply to one HTTP task request: a JSON body, unless the
// request (a 2025-11-25 tasks/result) sends the client a request first,
// which turns it into an SSE stream carrying those requests and then the
// reply. Only the handler's goroutine writes it.
type sseReply struct {
	w       http.ResponseWriter
	session string
	started bool
}

// send writes msg as an event of the stream, starting it.
func (x *sseReply) send(msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	if !x.started {
		h := x.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		if x.session != "" {
			h.Set("Mcp-Session-Id", x.session)
		}
		x.w.WriteHeader(http.StatusOK)
		x.started = true
	}
	if _, err := fmt.Fprintf(x.w, "event: message\ndata: %s\n\n", data); err != nil {
		return err
	}
	return http.NewResponseController(x.w).Flush()
}

// reply writes the request's reply: an event of the stream once it has
// started, a JSON body otherwise.
func (x *sseReply) reply(resp *jsonrpc.Response) {
	if x.started {
		x.send(resp)
		return
	}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		http.Error(x.w, "encoding the task reply: "+err.Error(), http.StatusInternalServerError)
		return
	}
	x.w.Header().Set("Content-Type", "application/json")
	if x.session != "" {
		x.w.Header().Set("Mcp-Session-Id", x.session)
	}
	x.w.Write(data)
}

// httpAsker returns the request func of a 2025-11-25 HTTP task request
// (taskContext.request) and the client features its session declared at
// initialize, or nil when its questions cannot be put to the client: no
// session the go-sdk holds, or a client that does not take SSE replies.
func (s *Server) httpAsker(r *http.Request, who principal.Principal, out *sseReply) (func(context.Context, string, json.RawMessage) (json.RawMessage, error), map[string]bool) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" || !acceptsSSE(r.Header.Values("Accept")) {
		return nil, nil
	}
	var caps *mcp.ClientCapabilities
	for ss := range s.sdk.Sessions() {
		if ss.ID() == sid {
			if p := ss.InitializeParams(); p != nil {
				caps = p.Capabilities
			}
			break
		}
	}
	if caps == nil {
		return nil, nil
	}
	features := map[string]bool{
		tool.ClientElicit: caps.Elicitation != nil,
		tool.ClientSample: caps.Sampling != nil,
		tool.ClientRoots:  caps.RootsV2 != nil,
	}
	return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		key, ask, forget, err := s.tasks.asks.openAsk(sid, who)
		if err != nil {
			return nil, err
		}
		defer forget()
		if !s.sessionLive(sid) {
			// Deleted since tasks/result came (checked once registered:
			// a DELETE after this ends it by endSession).
			return nil, errSessionGone
		}
		id, err := jsonrpc.MakeID(key)
		if err != nil {
			return nil, err
		}
		if err := out.send(&jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
			return nil, fmt.Errorf("sending %s: %w", method, err)
		}
		select {
		case resp := <-ask.reply:
			if resp.Error != nil {
				return nil, resp.Error
			}
			return resp.Result, nil
		case <-ask.gone:
			return nil, errSessionGone
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}, features
}

// acceptsSSE says whether an Accept header takes text/event-stream.
func acceptsSSE(accept []string) bool {
	return slices.ContainsFunc(accept, func(v string) bool {
		return strings.Contains(v, "text/event-stream") || strings.Contains(v, "*/*")
	})
}
