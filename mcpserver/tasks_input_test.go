package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/tool"
)

// inputMeta is a 2026-07-28 request's _meta declaring the Tasks extension
// and elicitation.
var inputMeta = map[string]any{
	"io.modelcontextprotocol/protocolVersion": "2026-07-28",
	"io.modelcontextprotocol/clientInfo":      map[string]any{"name": "t", "version": "1"},
	"io.modelcontextprotocol/clientCapabilities": map[string]any{
		"elicitation": map[string]any{},
		"extensions":  map[string]any{ExtensionTasks: map[string]any{}},
	},
}

// inputServer serves "asker" (asks two questions at once and answers with
// the answers), "crash" (the guest traps) and "failing" (the tool's own
// error), each may run as a task.
func inputServer(t testing.TB, wait time.Duration) *Server {
	t.Helper()
	tools := newFakeTools(taskDesc("asker", tool.TaskOptional), taskDesc("crash", tool.TaskOptional), taskDesc("failing", tool.TaskOptional), taskDesc("greedy", tool.TaskOptional))
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		switch c.Name {
		case "greedy": // more questions at once than a task holds
			reqs := make([]tool.ClientRequest, tasks.MaxInputRequests+1)
			for i := range reqs {
				reqs[i] = tool.ClientRequest{Key: fmt.Sprintf("q%d", i), Method: tool.MethodElicit, Params: json.RawMessage(`{"message":"?"}`)}
			}
			_, err := c.Client.Ask(ctx, reqs)
			return tool.ErrorResult(err.(*tool.Error)), nil
		case "crash":
			return tool.ErrorResult(&tool.Error{Kind: tool.KindTrapped, Trap: tool.TrapUnreachable, Message: "crash failed at its panic"}), nil
		case "failing":
			return tool.ErrorResult(tool.Errorf(tool.KindFailed, "failing failed on purpose")), nil
		}
		if c.Client == nil || !c.Client.Supports(tool.ClientElicit) {
			return tool.ErrorResult(tool.Errorf(tool.KindUnsupported, "no elicitation")), nil
		}
		q := func(key, msg string) tool.ClientRequest {
			return tool.ClientRequest{Key: key, Method: tool.MethodElicit,
				Params: json.RawMessage(fmt.Sprintf(`{"message":%q,"requestedSchema":{"type":"object","properties":{}}}`, msg))}
		}
		answers, err := c.Client.Ask(ctx, []tool.ClientRequest{q("first", "First?"), q("second", "Second?")})
		if err != nil {
			return tool.ErrorResult(err.(*tool.Error)), nil
		}
		return &tool.Result{Content: []tool.Content{tool.TextContent(string(answers[0]) + " " + string(answers[1]))}}, nil
	})
	opts := Options{Tasks: newStoreRunner(t, tasks.Bounds{}), Logger: slog.New(slog.DiscardHandler)}
	if wait > 0 {
		opts.ClientWait = func() time.Duration { return wait }
	}
	s := New(tools, opts)
	t.Cleanup(func() { s.Close() })
	return s
}

// taskAsker sends requests as tc through the task protocol (claimTask).
func taskAsker(t *testing.T, s *Server) func(tc taskContext, method string, params map[string]any) *taskReply {
	return func(tc taskContext, method string, params map[string]any) *taskReply {
		t.Helper()
		if _, ok := params["_meta"]; !ok {
			params["_meta"] = inputMeta
		}
		raw, _ := json.Marshal(params)
		id, _ := jsonrpc.MakeID(float64(1))
		claim := s.claimTask(&jsonrpc.Request{ID: id, Method: method, Params: raw}, tc)
		if claim == nil {
			t.Fatalf("%s was not claimed", method)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return claim(ctx)
	}
}

// roundTrip is the reply as a client reads it (JSON).
func roundTrip(t *testing.T, r *taskReply) map[string]any {
	t.Helper()
	if r.err != nil {
		t.Fatalf("want a result, got error %d %q", r.err.Code, r.err.Message)
	}
	raw, err := json.Marshal(r.result)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// until polls tasks/get until the task's status is want (or terminal).
func until(t *testing.T, ask func(taskContext, string, map[string]any) *taskReply, tc taskContext, id string, want tasks.Status) map[string]any {
	t.Helper()
	for {
		got := roundTrip(t, ask(tc, "tasks/get", map[string]any{"taskId": id}))
		if s := tasks.Status(got["status"].(string)); s == want || s.Terminal() {
			return got
		}
	}
}

func wantRefusal(t *testing.T, what string, r *taskReply, code int64, msg string) {
	t.Helper()
	if r.err == nil || r.err.Code != code || r.err.Message != msg {
		t.Errorf("%s: got %+v, want %d %q", what, r, code, msg)
	}
}

var (
	alice = taskContext{version: "2026-07-28", principal: principal.Principal{Subject: "alice", Issuer: "https://as", Via: principal.ViaOAuth}}
	bob   = taskContext{version: "2026-07-28", principal: principal.Principal{Subject: "bob", Issuer: "https://as", Via: principal.ViaOAuth}}
)

// TestTaskInputRequired: a task's call that asks makes the task
// input_required, its tasks/get showing the outstanding requests as
// inputRequests; tasks/update answers part of them (the task stays
// input_required, showing the rest), then the rest, and the parked call
// goes on to complete with the answers. An answer of the wrong kind, past
// the bounds, or by another principal is refused; one for a key not asked,
// given twice (a spent answer replayed) or after the end is acknowledged
// and not taken (SEP-2663), the acknowledgement saying why; neither
// changes anything.
func TestTaskInputRequired(t *testing.T) {
	s := inputServer(t, 0)
	ask := taskAsker(t, s)
	created := roundTrip(t, ask(alice, "tools/call", map[string]any{"name": "asker", "arguments": map[string]any{}}))
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call = %s", dump(created))
	}
	got := until(t, ask, alice, id, tasks.InputRequired)
	reqs, _ := got["inputRequests"].(map[string]any)
	if got["status"] != "input_required" || len(reqs) != 2 {
		t.Fatalf("tasks/get = %s", dump(got))
	}
	for key, msg := range map[string]string{"first": "First?", "second": "Second?"} {
		r, _ := reqs[key].(map[string]any)
		if r["method"] != "elicitation/create" || r["params"].(map[string]any)["message"] != msg {
			t.Errorf("inputRequests[%s] = %s", key, dump(r))
		}
	}
	if _, ok := got["result"]; ok {
		t.Errorf("an input_required task carries a result: %s", dump(got))
	}

	// Another principal: the answer of a task that does not exist.
	unknown := strings.Repeat("0", tasks.IDLen)
	accept := map[string]any{"action": "accept", "content": map[string]any{}}
	for _, m := range []string{"tasks/get", "tasks/update"} {
		p := func(id string) map[string]any {
			return map[string]any{"taskId": id, "inputResponses": map[string]any{"first": accept}}
		}
		theirs, none := ask(bob, m, p(id)), ask(bob, m, p(unknown))
		if theirs.err == nil || dump(theirs.err) != dump(none.err) {
			t.Errorf("%s of alice's task by bob = %+v, of an unknown id %+v", m, theirs.err, none.err)
		}
	}
	update := func(responses any) *taskReply {
		return ask(alice, "tasks/update", map[string]any{"taskId": id, "inputResponses": responses})
	}
	wantIgnored(t, "a key not asked", update(map[string]any{"third": accept}),
		`{"third":"not an outstanding request of this task (outstanding: \"first\", \"second\")"}`)
	wantRefusal(t, "an answer of another method", update(map[string]any{"first": map[string]any{"roots": []any{}}}), jsonrpc.CodeInvalidParams,
		`inputResponses["first"] is not a result of elicitation/create`)
	wantRefusal(t, "an answer that is no result", update(map[string]any{"first": 12345}), jsonrpc.CodeInvalidParams,
		`invalid params: inputResponses["first"] is not a result of elicitation/create`)
	wantRefusal(t, "null inputResponses", update(nil), jsonrpc.CodeInvalidParams, `invalid params: inputResponses must be an object, got null`)
	many := map[string]any{}
	for i := range tasks.MaxInputRequests + 1 {
		many[fmt.Sprintf("k%d", i)] = accept
	}
	wantRefusal(t, "too many answers", update(many), jsonrpc.CodeInvalidParams,
		fmt.Sprintf("invalid params: inputResponses has more than %d members, the most a task asks at once", tasks.MaxInputRequests))
	if got := until(t, ask, alice, id, tasks.InputRequired); len(got["inputRequests"].(map[string]any)) != 2 {
		t.Fatalf("after refused updates: %s", dump(got))
	}

	// Partial fulfilment.
	if r := roundTrip(t, update(map[string]any{"first": map[string]any{"action": "accept", "content": map[string]any{"n": 1}}})); dump(r) != `{"resultType":"complete"}` {
		t.Errorf("tasks/update = %s", dump(r))
	}
	got = roundTrip(t, ask(alice, "tasks/get", map[string]any{"taskId": id}))
	if reqs, _ := got["inputRequests"].(map[string]any); got["status"] != "input_required" || len(reqs) != 1 || reqs["second"] == nil {
		t.Fatalf("after a partial update: %s", dump(got))
	}
	wantIgnored(t, "a spent answer replayed", update(map[string]any{"first": accept}),
		`{"first":"answered already; an answer is taken once"}`)
	// Not outstanding, so ignored (SEP-2663), whatever its kind.
	wantIgnored(t, "an answer of another kind to a request answered already", update(map[string]any{"first": []any{1, 2}}),
		`{"first":"answered already; an answer is taken once"}`)
	roundTrip(t, update(map[string]any{"second": map[string]any{"action": "decline"}}))
	got = until(t, ask, alice, id, tasks.Completed)
	if got["status"] != "completed" || dump(got["result"].(map[string]any)["content"]) !=
		`[{"text":"{\"action\":\"accept\",\"content\":{\"n\":1}} {\"action\":\"decline\"}","type":"text"}]` {
		t.Fatalf("the completed task: %s", dump(got))
	}
	wantIgnored(t, "an answer after the end", update(map[string]any{"second": accept}),
		`{"second":"task `+id+` is completed and asks nothing"}`)
}

// TestTaskInputCancelAndWait: tasks/cancel while a task waits for input
// ends it cancelled; more questions at once than a task holds are the
// call's error; a client that never answers is bounded by client_wait,
// whose refusal names what was asked and the config key.
func TestTaskInputCancelAndWait(t *testing.T) {
	s := inputServer(t, 0)
	ask := taskAsker(t, s)
	id := roundTrip(t, ask(alice, "tools/call", map[string]any{"name": "asker"}))["taskId"].(string)
	until(t, ask, alice, id, tasks.InputRequired)
	if r := roundTrip(t, ask(alice, "tasks/cancel", map[string]any{"taskId": id})); dump(r) != `{"resultType":"complete"}` {
		t.Errorf("tasks/cancel = %s", dump(r))
	}
	if got := roundTrip(t, ask(alice, "tasks/get", map[string]any{"taskId": id})); got["status"] != "cancelled" || got["inputRequests"] != nil {
		t.Errorf("cancelled while waiting: %s", dump(got))
	}

	// More questions at once than a task holds: the call's error, named.
	id = roundTrip(t, ask(alice, "tools/call", map[string]any{"name": "greedy"}))["taskId"].(string)
	got := until(t, ask, alice, id, tasks.Completed)
	if res, _ := got["result"].(map[string]any); res["isError"] != true || !strings.Contains(dump(res["content"]), "invalid_arguments: asking the client through the task: ") ||
		!strings.Contains(dump(res["content"]), fmt.Sprintf("task input refused: %d requests at once, more than the %d a task holds", tasks.MaxInputRequests+1, tasks.MaxInputRequests)) {
		t.Errorf("too many questions at once: %s", dump(got))
	}

	s = inputServer(t, time.Millisecond)
	ask = taskAsker(t, s)
	id = roundTrip(t, ask(alice, "tools/call", map[string]any{"name": "asker"}))["taskId"].(string)
	got = until(t, ask, alice, id, tasks.Completed)
	res, _ := got["result"].(map[string]any)
	if got["status"] != "completed" || res["isError"] != true || !strings.Contains(dump(res["content"]),
		`the client did not answer elicitation/create \"first\", elicitation/create \"second\" within 1ms (tools.defaults.client_wait)`) {
		t.Errorf("no answer within client_wait: %s", dump(got))
	}
}

// TestTaskFailedOnCrash: a guest that traps ends its task failed, with the
// trap's message as a JSON-RPC error and no result (SEP-2663's protocol
// error); a tool's own error ends it completed with isError. On
// 2025-11-25 tasks/result answers the failed task with that error.
func TestTaskFailedOnCrash(t *testing.T) {
	s := inputServer(t, 0)
	ask := taskAsker(t, s)
	id := roundTrip(t, ask(alice, "tools/call", map[string]any{"name": "crash"}))["taskId"].(string)
	got := until(t, ask, alice, id, tasks.Failed)
	e, _ := got["error"].(map[string]any)
	if got["status"] != "failed" || got["result"] != nil || e["code"] != float64(jsonrpc.CodeInternalError) ||
		e["message"] != "trapped (unreachable): crash failed at its panic" {
		t.Errorf("a crashed task: %s", dump(got))
	}
	id = roundTrip(t, ask(alice, "tools/call", map[string]any{"name": "failing"}))["taskId"].(string)
	got = until(t, ask, alice, id, tasks.Completed)
	if res, _ := got["result"].(map[string]any); got["status"] != "completed" || res["isError"] != true {
		t.Errorf("a tool error: %s", dump(got))
	}

	legacy := taskContext{version: "2025-11-25", principal: alice.principal}
	created := ask(legacy, "tools/call", map[string]any{"name": "crash", "task": map[string]any{}, "_meta": map[string]any{}})
	id = roundTrip(t, created)["task"].(map[string]any)["taskId"].(string)
	r := ask(legacy, "tasks/result", map[string]any{"taskId": id, "_meta": map[string]any{}})
	wantRefusal(t, "tasks/result of a crashed task", r, jsonrpc.CodeInternalError,
		"task "+id+" failed: trapped (unreachable): crash failed at its panic")
}

// wantIgnored checks a tasks/update acknowledged with the keys it did not
// take (ignored, as JSON).
func wantIgnored(t *testing.T, what string, r *taskReply, ignored string) {
	t.Helper()
	if got := dump(roundTrip(t, r)); got != `{"_meta":{"warden/ignoredInputResponses":`+ignored+`},"resultType":"complete"}` {
		t.Errorf("%s: %s, want ignored %s", what, got, ignored)
	}
}

// TestTaskInputLegacyStdio: on 2025-11-25 over stdio, a task's call that
// asks makes the task input_required; the client's tasks/result receives
// the questions as requests of the server's own, each tied to the task by
// _meta["io.modelcontextprotocol/related-task"], and its answers reach the
// parked call, whose result tasks/result then returns. An answer of the
// wrong kind goes through tasks/update's checks (refused, nothing taken,
// asked again); a response to a request never sent, and a second response
// to one, are dropped, never answered. A client that did not declare
// elicitation at initialize is not asked: the call sees the feature
// unsupported.
func TestTaskInputLegacyStdio(t *testing.T) {
	s := inputServer(t, 0)
	c := startRawStdio(t, s)
	resultOf(t, c.call(t, 1, "initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{"elicitation": map[string]any{}},
		"clientInfo": map[string]any{"name": "t", "version": "1"},
	}))
	c.notify(t, "notifications/initialized")
	created := resultOf(t, c.call(t, 2, "tools/call", map[string]any{"name": "asker", "arguments": map[string]any{}, "task": map[string]any{}}))
	id := created["task"].(map[string]any)["taskId"].(string)
	for {
		got := resultOf(t, c.call(t, 3, "tasks/get", map[string]any{"taskId": id}))
		if got["status"] == "input_required" {
			break
		}
		if ended(got) {
			t.Fatalf("the task ended without asking: %s", dump(got))
		}
	}
	send := func(m map[string]any) {
		t.Helper()
		line, _ := json.Marshal(m)
		if _, err := c.in.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	answer := func(id any, result any) map[string]any {
		return map[string]any{"jsonrpc": "2.0", "id": id, "result": result}
	}
	said := func(what string) map[string]any {
		return map[string]any{"action": "accept", "content": map[string]any{"said": what}}
	}
	// result sends tasks/result as rid, answers each question the server
	// sends with the messages reply gives for it, and returns the reply to
	// rid and the questions' messages. Nothing else but notifications may
	// come: a reply to one of the client's responses would be an answer to
	// a response.
	result := func(rid int, reply func(qid any, message string) []map[string]any) (map[string]any, []string) {
		t.Helper()
		send(map[string]any{"jsonrpc": "2.0", "id": rid, "method": "tasks/result", "params": map[string]any{"taskId": id}})
		var asked []string
		for {
			l, err := c.out.ReadBytes('\n')
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(l, &m); err != nil {
				t.Fatal(err)
			}
			switch {
			case m["method"] == "elicitation/create":
				p := m["params"].(map[string]any)
				rel, _ := p["_meta"].(map[string]any)[metaRelatedTask].(map[string]any)
				if rel["taskId"] != id {
					t.Errorf("a task's question without its related-task _meta: %s", l)
				}
				asked = append(asked, p["message"].(string))
				for _, r := range reply(m["id"], p["message"].(string)) {
					send(r)
				}
			case m["id"] == float64(rid):
				return m, asked
			case m["method"] == nil:
				t.Errorf("a message that answers none of the client's requests: %s", l)
			}
		}
	}

	// An answer of the wrong kind (a roots result to an elicitation) goes
	// through the checks a tasks/update's does, as it comes: refused,
	// nothing taken, the next question not asked.
	m, asked := result(4, func(qid any, message string) []map[string]any {
		if message == "First?" {
			return []map[string]any{answer(qid, map[string]any{"roots": []any{}})}
		}
		return []map[string]any{answer(qid, said(message))}
	})
	if e, _ := m["error"].(map[string]any); e["code"] != float64(jsonrpc.CodeInvalidParams) || e["message"] != `inputResponses["first"] is not a result of elicitation/create` {
		t.Errorf("tasks/result over a wrong-kind answer = %s", dump(m))
	}
	if len(asked) != 1 || asked[0] != "First?" {
		t.Errorf("questions sent: %q", asked)
	}
	if got := resultOf(t, c.call(t, 3, "tasks/get", map[string]any{"taskId": id})); got["status"] != "input_required" {
		t.Fatalf("after a wrong-kind answer: %s", dump(got))
	}

	// A response with both a result and an error is no JSON-RPC response:
	// the stream ends, nothing is taken (neither the result nor the error
	// as the client's refusal), and the task still asks.
	m, _ = result(40, func(qid any, message string) []map[string]any {
		return []map[string]any{{"jsonrpc": "2.0", "id": qid, "result": said(message), "error": map[string]any{"code": -1, "message": "no"}}}
	})
	if e, _ := m["error"].(map[string]any); e == nil || !strings.Contains(fmt.Sprint(e["message"]), "has both a result and an error") {
		t.Errorf("tasks/result over a response with a result and an error = %s", dump(m))
	}
	if got := resultOf(t, c.call(t, 3, "tasks/get", map[string]any{"taskId": id})); got["status"] != "input_required" {
		t.Fatalf("after a response with a result and an error: %s", dump(got))
	}

	// Asked again: a response to a request never sent (warden-task-999)
	// and a second response to one request are dropped; the first
	// response to each request is the one taken.
	m, asked = result(5, func(qid any, message string) []map[string]any {
		if message == "First?" {
			return []map[string]any{answer("warden-task-999", said("unknown")), answer(qid, said(message)), answer(qid, said("second response"))}
		}
		return []map[string]any{answer(qid, said(message))}
	})
	res := resultOf(t, m)
	text := dump(res["content"])
	if !strings.Contains(text, `\"said\":\"First?\"`) || !strings.Contains(text, `\"said\":\"Second?\"`) ||
		strings.Contains(text, "unknown") || strings.Contains(text, "second response") ||
		res["_meta"].(map[string]any)[metaRelatedTask].(map[string]any)["taskId"] != id {
		t.Errorf("tasks/result = %s", dump(res))
	}
	if len(asked) != 2 || asked[0] != "First?" || asked[1] != "Second?" {
		t.Errorf("questions sent again: %q", asked)
	}

	// No elicitation declared: not asked.
	c = startRawStdio(t, s)
	resultOf(t, c.call(t, 1, "initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"},
	}))
	c.notify(t, "notifications/initialized")
	id = resultOf(t, c.call(t, 2, "tools/call", map[string]any{"name": "asker", "arguments": map[string]any{}, "task": map[string]any{}}))["task"].(map[string]any)["taskId"].(string)
	res = resultOf(t, c.call(t, 3, "tasks/result", map[string]any{"taskId": id}))
	if res["isError"] != true || !strings.Contains(dump(res["content"]), "no elicitation") {
		t.Errorf("a task of a client without elicitation: %s", dump(res))
	}
}

func ended(m map[string]any) bool {
	s, _ := m["status"].(string)
	return tasks.Status(s).Terminal()
}

// staleGetRunner answers Get with a record read before the task asked
// (working): what a tasks/update that read the task just before its call
// asked would have seen.
type staleGetRunner struct {
	TaskRunner
	stale tasks.Task
}

func (r staleGetRunner) Get(context.Context, string, string) (tasks.Task, error) { return r.stale, nil }

// TestTaskUpdateChecksWhatItTakes: the kind of an answer is checked
// against the request it answers in the record the answer is written to,
// not against an earlier read: a tasks/update whose read of the task
// predates the task's question (keys are predictable) cannot get an answer
// of the wrong kind (a list, a roots result for an elicitation, null) to
// the call. The update is refused, nothing is taken, and the task still
// asks both questions.
func TestTaskUpdateChecksWhatItTakes(t *testing.T) {
	s := inputServer(t, 0)
	ask := taskAsker(t, s)
	id := roundTrip(t, ask(alice, "tools/call", map[string]any{"name": "asker", "arguments": map[string]any{}}))["taskId"].(string)
	until(t, ask, alice, id, tasks.InputRequired)
	real := s.opts.Tasks
	s.opts.Tasks = staleGetRunner{TaskRunner: real, stale: tasks.Task{ID: id, Owner: tasks.OwnerOf(alice.principal, ""), Status: tasks.Working}}
	for _, c := range []struct {
		what    string
		answers map[string]any
		msg     string
	}{
		{"a list", map[string]any{"first": []any{1, 2}, "second": map[string]any{"action": "decline"}},
			`invalid params: inputResponses["first"] is not a result of elicitation/create`},
		{"a roots result", map[string]any{"first": map[string]any{"action": "decline"}, "second": map[string]any{"roots": []any{}}},
			`inputResponses["second"] is not a result of elicitation/create`},
		{"null", map[string]any{"first": nil},
			`invalid params: inputResponses["first"] is not a result of elicitation/create`},
	} {
		wantRefusal(t, c.what, ask(alice, "tasks/update", map[string]any{"taskId": id, "inputResponses": c.answers}), jsonrpc.CodeInvalidParams, c.msg)
	}
	s.opts.Tasks = real
	if got := roundTrip(t, ask(alice, "tasks/get", map[string]any{"taskId": id})); got["status"] != "input_required" || len(got["inputRequests"].(map[string]any)) != 2 {
		t.Fatalf("after refused updates: %s", dump(got))
	}
	roundTrip(t, ask(alice, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		"first": map[string]any{"action": "decline"}, "second": map[string]any{"action": "cancel"}}}))
	got := until(t, ask, alice, id, tasks.Completed)
	if res, _ := got["result"].(map[string]any); dump(res["content"]) != `[{"text":"{\"action\":\"decline\"} {\"action\":\"cancel\"}","type":"text"}]` {
		t.Errorf("the completed task: %s", dump(got))
	}
}

// answeredRunner answers Get and List with one record: a task whose every
// request is answered, the answers not yet taken by its call.
type answeredRunner struct {
	TaskRunner
	task tasks.Task
}

func (r answeredRunner) Get(context.Context, string, string) (tasks.Task, error) { return r.task, nil }

func (r answeredRunner) List(context.Context, string, string) ([]tasks.Task, string, error) {
	return []tasks.Task{r.task}, "", nil
}

// TestTaskAnsweredShowsWorking: a task whose round is answered but whose
// call has not taken the answers yet asks nothing: tasks/get (both
// generations) and tasks/list show it working, without inputRequests, not
// input_required with nothing to answer. One request outstanding shows it
// input_required.
func TestTaskAnsweredShowsWorking(t *testing.T) {
	s := inputServer(t, 0)
	ask := taskAsker(t, s)
	id := strings.Repeat("a", tasks.IDLen)
	rec := tasks.Task{ID: id, Tool: "asker", Status: tasks.InputRequired, TTL: time.Hour,
		InputRequests: []tasks.InputRequest{
			{Key: "first", Method: tool.MethodElicit, Params: json.RawMessage(`{"message":"First?"}`)},
			{Key: "second", Method: tool.MethodElicit, Params: json.RawMessage(`{"message":"Second?"}`)}},
		InputResponses: map[string]json.RawMessage{"first": json.RawMessage(`{"action":"decline"}`), "second": json.RawMessage(`{"action":"decline"}`)}}
	legacy := taskContext{version: "2025-11-25", principal: alice.principal}
	for _, c := range []struct {
		answered []string
		want     string
	}{
		{[]string{"first", "second"}, "working"},
		{[]string{"first"}, "input_required"},
	} {
		r := rec
		r.InputResponses = map[string]json.RawMessage{}
		for _, k := range c.answered {
			r.InputResponses[k] = rec.InputResponses[k]
		}
		s.opts.Tasks = answeredRunner{TaskRunner: s.opts.Tasks, task: r}
		got := roundTrip(t, ask(alice, "tasks/get", map[string]any{"taskId": id}))
		if got["status"] != c.want || (c.want == "working") != (got["inputRequests"] == nil) {
			t.Errorf("answered %v: 2026-07-28 tasks/get = %s", c.answered, dump(got))
		}
		if got := roundTrip(t, ask(legacy, "tasks/get", map[string]any{"taskId": id, "_meta": map[string]any{}})); got["status"] != c.want {
			t.Errorf("answered %v: 2025-11-25 tasks/get = %s", c.answered, dump(got))
		}
		list := roundTrip(t, ask(legacy, "tasks/list", map[string]any{"_meta": map[string]any{}}))
		if ts, _ := list["tasks"].([]any); len(ts) != 1 || ts[0].(map[string]any)["status"] != c.want {
			t.Errorf("answered %v: 2025-11-25 tasks/list = %s", c.answered, dump(list))
		}
		s.opts.Tasks = s.opts.Tasks.(answeredRunner).TaskRunner
	}
}
