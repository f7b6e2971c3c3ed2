package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/tool"
)

// recordingAsker is a 2025-11-25 client's side of tasks/result
// (taskContext.request): each question it is put is sent on asked; answer
// says what to do with it (nil: wait until the server gives it up).
type recordingAsker struct {
	mu     sync.Mutex
	asked  []string
	sent   chan string
	gaveUp chan string
	answer func(message string) json.RawMessage
}

func newRecordingAsker(answer func(string) json.RawMessage) *recordingAsker {
	return &recordingAsker{sent: make(chan string, 8), gaveUp: make(chan string, 8), answer: answer}
}

func (a *recordingAsker) request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var p struct{ Message string }
	json.Unmarshal(params, &p)
	a.mu.Lock()
	a.asked = append(a.asked, p.Message)
	a.mu.Unlock()
	a.sent <- p.Message
	if res := a.answer(p.Message); res != nil {
		return res, nil
	}
	<-ctx.Done()
	a.gaveUp <- p.Message
	return nil, ctx.Err()
}

func (a *recordingAsker) questions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

func (a *recordingAsker) tc() taskContext {
	return taskContext{version: "2025-11-25", principal: alice.principal, request: a.request,
		features: map[string]bool{tool.ClientElicit: true}}
}

// within fails the test if ch gives nothing for 20s: a guard against
// a hang, not a timing assertion.
func within[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: nothing after 20s", what)
		panic("unreachable")
	}
}

func said(message string) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{"action": "accept", "content": map[string]any{"said": message}})
	return raw
}

// TestTaskOneAskerPerTask: two 2025-11-25 tasks/result of one task (one
// principal, two streams) put each question to the client once: the first
// stream asks; the second awaits the task's end, asking nothing, and both
// end with the task's result.
func TestTaskOneAskerPerTask(t *testing.T) {
	s := inputServer(t, 0)
	ask := taskAsker(t, s)
	id := roundTrip(t, ask(alice, "tools/call", map[string]any{"name": "asker"}))["taskId"].(string)
	until(t, ask, alice, id, tasks.InputRequired)

	release := make(chan struct{})
	first := newRecordingAsker(func(m string) json.RawMessage {
		if m == "First?" {
			<-release // the second stream comes while the first asks
		}
		return said(m)
	})
	second := newRecordingAsker(func(m string) json.RawMessage { return said("second stream " + m) })
	replies := make(chan *taskReply, 2)
	go func() {
		replies <- ask(first.tc(), "tasks/result", map[string]any{"taskId": id, "_meta": map[string]any{}})
	}()
	within(t, "the first stream's question", first.sent)
	go func() {
		replies <- ask(second.tc(), "tasks/result", map[string]any{"taskId": id, "_meta": map[string]any{}})
	}()
	close(release)
	for range 2 {
		res := roundTrip(t, within(t, "a tasks/result", replies))
		if text := dump(res["content"]); !strings.Contains(text, `\"said\":\"First?\"`) || !strings.Contains(text, `\"said\":\"Second?\"`) {
			t.Errorf("tasks/result = %s", dump(res))
		}
	}
	if q := first.questions(); len(q) != 2 || q[0] != "First?" || q[1] != "Second?" {
		t.Errorf("the first stream asked %q", q)
	}
	if q := second.questions(); len(q) != 0 {
		t.Errorf("the second stream asked %q too", q)
	}
}

// TestTaskQuestionLeavesTheStream: a question a tasks/result stream puts
// to its client ends there as soon as its key leaves the record's
// outstanding set: answered another way (a tasks/update, here the
// runner's Respond), the stream goes on to the next question at once;
// given up by the call (its client_wait ran out first: the record is
// working again), the stream's client left it unanswered: the stream asks
// no more and frees the task's asker slot, awaiting the end alone.
func TestTaskQuestionLeavesTheStream(t *testing.T) {
	s := inputServer(t, 0)
	ask := taskAsker(t, s)
	r := s.opts.Tasks.(*storeRunner)
	owner := tasks.OwnerOf(alice.principal, "")
	id := roundTrip(t, ask(alice, "tools/call", map[string]any{"name": "asker"}))["taskId"].(string)
	until(t, ask, alice, id, tasks.InputRequired)

	client := newRecordingAsker(func(string) json.RawMessage { return nil })
	replies := make(chan *taskReply, 1)
	go func() {
		replies <- ask(client.tc(), "tasks/result", map[string]any{"taskId": id, "_meta": map[string]any{}})
	}()
	if q := within(t, "the first question", client.sent); q != "First?" {
		t.Fatalf("asked %q first", q)
	}
	if _, err := r.Respond(context.Background(), owner, id, map[string]json.RawMessage{"first": said("elsewhere")}); err != nil {
		t.Fatal(err)
	}
	if q := within(t, "the answered question given up", client.gaveUp); q != "First?" {
		t.Fatalf("gave up %q", q)
	}
	if q := within(t, "the next question", client.sent); q != "Second?" {
		t.Fatalf("asked %q second", q)
	}
	// The call gives the round up, as the runner does at its client_wait.
	if _, err := r.store.Update(context.Background(), owner, id, r.bounds, func(t *tasks.Task) {
		t.Status, t.StatusMessage = tasks.Working, "no answer came in time"
	}); err != nil {
		t.Fatal(err)
	}
	if q := within(t, "the question given up by the call", client.gaveUp); q != "Second?" {
		t.Fatalf("gave up %q", q)
	}
	// Its client left that question unanswered: the stream asks no more,
	// and frees the task's asker slot for another stream of the owner
	// while it still awaits the end.
	for i := 0; ; i++ {
		if release, _ := s.tasks.claimAsker(owner, id); release != nil {
			release()
			break
		}
		if i == 20000 {
			t.Fatal("the stream that left a question unanswered still holds the asker slot after 20s")
		}
		time.Sleep(time.Millisecond)
	}
	// The call, its round given up, may have ended the task meanwhile
	// (its Ask refused): either way the stream answers.
	if _, err := r.Cancel(context.Background(), owner, id); err != nil && !errors.Is(err, tasks.ErrTerminal) {
		t.Fatal(err)
	}
	if e := within(t, "tasks/result", replies); e.err == nil && e.result == nil {
		t.Error("no reply")
	}
	if q := client.questions(); len(q) != 2 {
		t.Errorf("asked %q", q)
	}
}

// TestTaskStreamRoundBytes: a stream holds one answer at a time, each
// delivered to the record, which bounds a round's answers together
// (tasks.MaxInputBytes): an answer that takes the round past it is refused
// (the stream ends naming the bound), the answers before it stay taken,
// and the task still asks for the rest.
func TestTaskStreamRoundBytes(t *testing.T) {
	s := inputServer(t, 0)
	ask := taskAsker(t, s)
	id := roundTrip(t, ask(alice, "tools/call", map[string]any{"name": "asker"}))["taskId"].(string)
	until(t, ask, alice, id, tasks.InputRequired)
	big := strings.Repeat("a", tasks.MaxInputBytes*2/3)
	client := newRecordingAsker(func(string) json.RawMessage { return said(big) })
	r := ask(client.tc(), "tasks/result", map[string]any{"taskId": id, "_meta": map[string]any{}})
	if r.err == nil || !strings.Contains(r.err.Message, "more than the 262144 a task holds") {
		t.Fatalf("a round past the bound: %+v", r)
	}
	got, err := s.opts.Tasks.Get(context.Background(), tasks.OwnerOf(alice.principal, ""), id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != tasks.InputRequired || len(got.InputResponses) != 1 || got.InputResponses["first"] == nil {
		t.Errorf("after the refusal: %s %v", got.Status, len(got.InputResponses))
	}
	if q := client.questions(); len(q) != 2 {
		t.Errorf("asked %q", q)
	}
	roundTrip(t, ask(alice, "tasks/cancel", map[string]any{"taskId": id}))
}

// wantClientErrorResult checks a tasks/result reply: the task completed,
// its call having seen the client's error to its first question as that
// request's error (the guest's refusal), not a -32603 ending the stream.
func wantClientErrorResult(t *testing.T, m map[string]any) {
	t.Helper()
	res := resultOf(t, m)
	if res["isError"] != true || !strings.Contains(dump(res["content"]),
		`failed: the client refused elicitation/create \"first\": error -1: no`) {
		t.Errorf("tasks/result after the client's error: %s", dump(m))
	}
}

// TestTaskClientErrorAnswerStdio: over stdio, a 2025-11-25 client that
// answers a task's question with a JSON-RPC error has given its answer:
// the call sees it as that request's error, the stream goes on (the next
// question, then the task's result), and the task does not wait for
// client_wait.
func TestTaskClientErrorAnswerStdio(t *testing.T) {
	s := inputServer(t, 0)
	c := startRawStdio(t, s)
	resultOf(t, c.call(t, 1, "initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{"elicitation": map[string]any{}},
		"clientInfo": map[string]any{"name": "t", "version": "1"},
	}))
	c.notify(t, "notifications/initialized")
	id := resultOf(t, c.call(t, 2, "tools/call", map[string]any{"name": "asker", "arguments": map[string]any{}, "task": map[string]any{}}))["task"].(map[string]any)["taskId"].(string)
	send := func(m map[string]any) {
		t.Helper()
		m["jsonrpc"] = "2.0"
		line, _ := json.Marshal(m)
		if _, err := c.in.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	send(map[string]any{"id": 4, "method": "tasks/result", "params": map[string]any{"taskId": id}})
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
		if m["method"] == "elicitation/create" {
			msg := m["params"].(map[string]any)["message"].(string)
			asked = append(asked, msg)
			if msg == "First?" {
				send(map[string]any{"id": m["id"], "error": map[string]any{"code": -1, "message": "no"}})
			} else {
				send(map[string]any{"id": m["id"], "result": json.RawMessage(said(msg))})
			}
			continue
		}
		if m["id"] == float64(4) {
			wantClientErrorResult(t, m)
			break
		}
	}
	if len(asked) != 2 {
		t.Errorf("asked %q", asked)
	}
}

// TestTaskClientErrorAnswerHTTP: the same over streamable HTTP: the
// client POSTs its error as the response (202), and the stream ends with
// the task's result.
func TestTaskClientErrorAnswerHTTP(t *testing.T) {
	s := inputServer(t, 0)
	url := oauthTaskServer(t, s)
	a := (&httpPeer{t: t, url: url, token: "alice"}).open(map[string]any{"elicitation": map[string]any{}})
	id := resultOf(t, a.call(2, "tools/call", map[string]any{"name": "asker", "arguments": map[string]any{}, "task": map[string]any{}}))["task"].(map[string]any)["taskId"].(string)
	stream := events(t, a.post(map[string]any{"id": 3, "method": "tasks/result", "params": map[string]any{"taskId": id}}))
	var asked []string
	for {
		m := within(t, "the stream", stream)
		if m == nil {
			t.Fatal("the stream ended without the reply")
		}
		if m["method"] == "elicitation/create" {
			msg := m["params"].(map[string]any)["message"].(string)
			asked = append(asked, msg)
			var resp *http.Response
			if msg == "First?" {
				resp = a.post(map[string]any{"id": m["id"], "error": map[string]any{"code": -1, "message": "no"}})
			} else {
				resp = a.post(map[string]any{"id": m["id"], "result": json.RawMessage(said(msg))})
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("the answer to %s: HTTP %d", msg, resp.StatusCode)
			}
			continue
		}
		wantClientErrorResult(t, m)
		break
	}
	if len(asked) != 2 {
		t.Errorf("asked %q", asked)
	}
}

// TestTaskAskerNeedsTheFeature: a tasks/result stream whose client did
// not declare what the task asks (here elicitation) is never put the
// question and never takes the task's asker slot: it awaits the end while
// a stream that can ask does; and a client's protocol error to a question
// (method not found) is no answer: it ends that stream, and the question
// waits for another, whose answer the call gets. Before, the first stream
// took the slot, was sent the question anyway, and its -32601 was stored
// as the person's answer.
func TestTaskAskerNeedsTheFeature(t *testing.T) {
	s := inputServer(t, 0)
	ask := taskAsker(t, s)
	id := roundTrip(t, ask(alice, "tools/call", map[string]any{"name": "asker"}))["taskId"].(string)
	until(t, ask, alice, id, tasks.InputRequired)

	mute := newRecordingAsker(func(m string) json.RawMessage { return said("mute " + m) })
	muteTC := mute.tc()
	muteTC.features = map[string]bool{}
	replies := make(chan *taskReply, 3)
	go func() {
		replies <- ask(muteTC, "tasks/result", map[string]any{"taskId": id, "_meta": map[string]any{}})
	}()

	// A client that cannot take elicitation/create at all.
	confused := func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
	}
	confusedTC := mute.tc()
	confusedTC.request = confused
	if got := ask(confusedTC, "tasks/result", map[string]any{"taskId": id, "_meta": map[string]any{}}); got.err == nil ||
		!strings.Contains(got.err.Message, "the client did not answer its elicitation/create request") {
		t.Errorf("tasks/result of a client answering -32601: %+v", got)
	}
	if got := roundTrip(t, ask(alice, "tasks/get", map[string]any{"taskId": id})); got["status"] != string(tasks.InputRequired) {
		t.Errorf("after the -32601: %s (the protocol error was taken as an answer)", dump(got))
	}

	able := newRecordingAsker(func(m string) json.RawMessage { return said(m) })
	go func() {
		replies <- ask(able.tc(), "tasks/result", map[string]any{"taskId": id, "_meta": map[string]any{}})
	}()
	for range 2 {
		res := roundTrip(t, within(t, "a tasks/result", replies))
		if text := dump(res["content"]); !strings.Contains(text, `\"said\":\"First?\"`) || !strings.Contains(text, `\"said\":\"Second?\"`) {
			t.Errorf("tasks/result = %s", dump(res))
		}
	}
	if q := mute.questions(); len(q) != 0 {
		t.Errorf("the stream without elicitation was asked %q", q)
	}
}
