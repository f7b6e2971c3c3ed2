package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/tool"
)

// protocolMRTR is the first protocol revision in which a server asks the
// client with input-required results (SEP-2322) instead of requests of its
// own.
const protocolMRTR = "2026-07-28"

// clientLink is the tool.Client of one request (tools/call, prompts/get,
// resources/read). On a session of a revision before 2026-07-28 it sends
// the client requests of its own (elicitation/create, ...) and waits. From
// 2026-07-28 on it answers from the request's inputResponses and its
// requestState, and a request with no answer yet stops the call
// (tool.ErrInputRequired): the server then returns an input-required
// result, and the client's retry replays the call with the answers (see
// RATIONALE.md, "Asking the client: replay").
type clientLink struct {
	session *mcp.ServerSession
	// capsOf returns the client's capabilities. It is called at most once,
	// on the first question about them: on a 2026-07-28 request they are
	// decoded from its _meta, work a call that asks nothing never does.
	capsOf   func() *mcp.ClientCapabilities
	capsOnce sync.Once
	caps     *mcp.ClientCapabilities
	mrtr     bool

	mu sync.Mutex
	// From the client's retry: the state's answers by key, in order of
	// asking, and the inputResponses for the state's pending requests (or,
	// with no state, for any key a tool may use).
	recorded  map[string][]answer
	responses map[string]mcp.InputResponse
	pending   map[string]asked // what the state asked for, by key
	hasState  bool
	// This run: how often each key was asked, keyless requests numbered,
	// the answers used and the requests still unanswered.
	occurrences map[string]int
	keyless     int
	used        []answer
	unanswered  []tool.ClientRequest
	missing     map[string]bool // features asked for that the client lacks
}

// newClientLink is the link of one request; capsOf is its
// ClientCapabilities method.
func newClientLink(session *mcp.ServerSession, capsOf func() *mcp.ClientCapabilities) *clientLink {
	l := &clientLink{session: session, capsOf: capsOf}
	if session != nil {
		if p := session.InitializeParams(); p != nil && p.ProtocolVersion >= protocolMRTR {
			l.mrtr = true
		}
	}
	return l
}

// Supports implements tool.Client.
func (l *clientLink) Supports(feature string) bool {
	l.capsOnce.Do(func() {
		if l.capsOf != nil {
			l.caps = l.capsOf()
		}
	})
	ok := false
	if c := l.caps; c != nil {
		switch feature {
		case tool.ClientElicit:
			ok = c.Elicitation != nil
		case tool.ClientSample:
			ok = c.Sampling != nil
		case tool.ClientRoots:
			ok = c.RootsV2 != nil
		}
	}
	return ok
}

// Require implements tool.Client.
func (l *clientLink) Require(feature string) bool {
	ok := l.Supports(feature)
	if !ok {
		l.mu.Lock()
		if l.missing == nil {
			l.missing = map[string]bool{}
		}
		l.missing[feature] = true
		l.mu.Unlock()
	}
	return ok
}

// Ask implements tool.Client.
func (l *clientLink) Ask(ctx context.Context, requests []tool.ClientRequest) ([]json.RawMessage, error) {
	l.mu.Lock()
	requests = l.name(requests)
	l.mu.Unlock()
	if !l.mrtr {
		return l.send(ctx, requests)
	}
	seen := make(map[string]bool, len(requests))
	for _, r := range requests {
		if seen[r.Key] {
			return nil, tool.Errorf(tool.KindInvalidArguments, "client request key %q used twice in one ask", r.Key)
		}
		seen[r.Key] = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	results := make([]json.RawMessage, len(requests))
	var unanswered []tool.ClientRequest
	for i, r := range requests {
		a := asked{Key: r.Key, Method: r.Method, Digest: digest(r.Params)}
		if l.occurrences == nil {
			l.occurrences = map[string]int{}
		}
		n := l.occurrences[r.Key]
		l.occurrences[r.Key]++
		if prev := l.recorded[r.Key]; n < len(prev) && prev[n].asked == a {
			results[i] = prev[n].Result
			l.used = append(l.used, prev[n])
			continue
		}
		if result, ok, err := l.response(a, n); err != nil {
			return nil, err
		} else if ok {
			results[i] = result
			l.used = append(l.used, answer{asked: a, Result: result})
			continue
		}
		unanswered = append(unanswered, r)
	}
	if len(unanswered) > 0 {
		l.unanswered = unanswered
		return nil, tool.ErrInputRequired
	}
	return results, nil
}

// name gives keyless requests a key: the feature and a count, the same on
// every replay of a deterministic call. A name is never one of the batch's
// own keys: two requests under one key cannot both be put to a 2026-07-28
// client (its inputRequests are a map).
func (l *clientLink) name(requests []tool.ClientRequest) []tool.ClientRequest {
	return nameRequests(requests, &l.keyless)
}

// nameRequests is clientLink.name with the call's count of keyless
// requests in *keyless (a task's call names its requests alike).
func nameRequests(requests []tool.ClientRequest, keyless *int) []tool.ClientRequest {
	taken := make(map[string]bool, len(requests))
	for _, r := range requests {
		taken[r.Key] = true
	}
	out := make([]tool.ClientRequest, len(requests))
	for i, r := range requests {
		for r.Key == "" {
			*keyless++
			if k := fmt.Sprintf("%s-%d", tool.FeatureOf(r.Method), *keyless); !taken[k] {
				r.Key = k
			}
		}
		out[i] = r
	}
	return out
}

// response returns the client's inputResponse for a, if it may be used: a
// is what the state asked for, or, with no state (the ephemeral flow), a
// tool's own request asked for the first time. warden's own requests (a
// gate's confirmation) are answered only through a state, which proves
// the client was asked this very question for this very call.
func (l *clientLink) response(a asked, occurrence int) (json.RawMessage, bool, error) {
	resp, ok := l.responses[a.Key]
	if !ok {
		return nil, false, nil
	}
	if l.hasState {
		p, was := l.pending[a.Key]
		if !was || p != a {
			return nil, false, nil
		}
	} else if occurrence > 0 || strings.HasPrefix(a.Key, tool.ReservedPrefix) {
		return nil, false, nil
	}
	if err := checkResponse(a, resp); err != nil {
		return nil, false, err
	}
	raw, err := json.Marshal(resp)
	if err != nil {
		return nil, false, err
	}
	// Spent: a second request under the same key needs its own answer.
	delete(l.responses, a.Key)
	return raw, true, nil
}

// checkResponse refuses an answer of the wrong shape for its request.
func checkResponse(a asked, resp mcp.InputResponse) error {
	ok := false
	switch resp.(type) {
	case *mcp.ElicitResult:
		ok = a.Method == tool.MethodElicit
	case *mcp.CreateMessageResult, *mcp.CreateMessageWithToolsResult:
		ok = a.Method == tool.MethodSample
	case *mcp.ListRootsResult:
		ok = a.Method == tool.MethodRoots
	}
	if !ok {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("inputResponses[%q] is not a result of %s", a.Key, a.Method)}
	}
	return nil
}

// send asks a session's client with requests of the server's own.
func (l *clientLink) send(ctx context.Context, requests []tool.ClientRequest) ([]json.RawMessage, error) {
	results := make([]json.RawMessage, len(requests))
	for i, r := range requests {
		var res any
		var err error
		switch r.Method {
		case tool.MethodElicit:
			var p mcp.ElicitParams
			if err = unmarshalParams(r, &p); err == nil {
				res, err = l.session.Elicit(ctx, &p)
			}
		case tool.MethodSample:
			var p mcp.CreateMessageParams
			if err = unmarshalParams(r, &p); err == nil {
				res, err = l.session.CreateMessage(ctx, &p)
			}
		case tool.MethodRoots:
			var p mcp.ListRootsParams
			if err = unmarshalParams(r, &p); err == nil {
				res, err = l.session.ListRoots(ctx, &p)
			}
		default:
			err = tool.Errorf(tool.KindInvalidArguments, "unknown client method %q", r.Method)
		}
		if err != nil {
			return nil, err
		}
		if results[i], err = json.Marshal(res); err != nil {
			return nil, err
		}
	}
	return results, nil
}

func unmarshalParams(r tool.ClientRequest, v any) error {
	p := r.Params
	if len(p) == 0 || string(p) == "null" {
		p = json.RawMessage("{}")
	}
	if err := json.Unmarshal(p, v); err != nil {
		return tool.Errorf(tool.KindInvalidArguments, "params of %s request %q: %v", r.Method, r.Key, err)
	}
	return nil
}

// inputRequests renders the unanswered requests for an input-required
// result.
func inputRequests(reqs []tool.ClientRequest) (mcp.InputRequestMap, error) {
	m := make(mcp.InputRequestMap, len(reqs))
	for _, r := range reqs {
		var v mcp.InputRequest
		switch r.Method {
		case tool.MethodElicit:
			v = new(mcp.ElicitParams)
		case tool.MethodSample:
			v = new(mcp.CreateMessageParams)
		case tool.MethodRoots:
			v = new(mcp.ListRootsParams)
		}
		if err := unmarshalParams(r, v); err != nil {
			return nil, err
		}
		m[r.Key] = v
	}
	return m, nil
}

// begin prepares the link for a request that may carry the answers of an
// earlier round: it verifies the requestState against what the request is
// (method, name, arguments, session). A state that fails is a protocol
// error (-32602), never a result.
func (s *Server) beginLink(l *clientLink, method, name string, args json.RawMessage, state string, responses mcp.InputResponseMap) error {
	if !l.mrtr {
		return nil
	}
	if len(responses) > 0 {
		l.responses = make(map[string]mcp.InputResponse, len(responses))
	}
	for k, v := range responses {
		if v != nil {
			l.responses[k] = v
		}
	}
	if state == "" {
		return nil
	}
	st, err := s.states.open(state, time.Now())
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	if st.Method != method || st.Name != name || st.Args != digest(args) || st.Session != l.sessionID() {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("requestState refused: it was issued for another request (%s %s with other arguments or in another session)", st.Method, st.Name)}
	}
	l.hasState = true
	l.recorded = map[string][]answer{}
	for _, a := range st.Answers {
		l.recorded[a.Key] = append(l.recorded[a.Key], a)
	}
	l.pending = make(map[string]asked, len(st.Pending))
	for _, p := range st.Pending {
		l.pending[p.Key] = p
		// An answer of the wrong kind is the client's error, refused here
		// as a protocol error: found later, while the tool asks, it could
		// only fail the tool.
		if resp, ok := l.responses[p.Key]; ok {
			if err := checkResponse(p, resp); err != nil {
				return err
			}
		}
	}
	return nil
}

func (l *clientLink) sessionID() string {
	if l.session == nil {
		return ""
	}
	return l.session.ID()
}

// inputRequired returns, when the request stopped for answers, the
// input-required parts of its result: the requests and a sealed state.
func (s *Server) inputRequired(l *clientLink, method, name string, args json.RawMessage) (mcp.InputRequestMap, string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.unanswered) == 0 {
		return nil, "", nil
	}
	reqs, err := inputRequests(l.unanswered)
	if err != nil {
		return nil, "", err
	}
	st := &requestState{
		Version: 1, Method: method, Name: name, Args: digest(args), Session: l.sessionID(),
		Expires: time.Now().Add(s.clientWait()).Unix(), Nonce: newNonce(),
		Answers: l.used,
	}
	for _, r := range l.unanswered {
		st.Pending = append(st.Pending, asked{Key: r.Key, Method: r.Method, Digest: digest(r.Params)})
	}
	sealed, err := s.states.seal(st)
	if err != nil {
		return nil, "", err
	}
	return reqs, sealed, nil
}

// missingCapabilities is the -32021 error of a 2026-07-28 request whose
// tool failed for want of client features the client did not declare.
func (l *clientLink) missingCapabilities() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.mrtr || len(l.missing) == 0 {
		return nil
	}
	// Built by hand: mcp.ClientCapabilities always marshals "roots" (its
	// deprecated Roots field is a struct), which would claim roots required.
	required := map[string]struct{}{}
	var names []string
	for f := range l.missing {
		if name := capabilityName(f); name != "" {
			required[name] = struct{}{}
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	data, err := json.Marshal(map[string]any{"requiredCapabilities": required})
	if err != nil {
		return err
	}
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities,
		Message: "the client did not declare " + strings.Join(names, ", ") + ", which this request needs",
		Data:    data}
}

// capabilityName is the MCP client capability of a feature, "" if none.
func capabilityName(feature string) string {
	switch feature {
	case tool.ClientElicit:
		return "elicitation"
	case tool.ClientSample:
		return "sampling"
	case tool.ClientRoots:
		return "roots"
	}
	return ""
}
