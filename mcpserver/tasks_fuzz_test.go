package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdkjson "github.com/segmentio/encoding/json"

	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/tool"
)

// FuzzTaskRequest feeds every task request (and task-augmented tools/call)
// arbitrary params, in both generations, to the server's task protocol:
// whatever the bytes, it answers with a result or one of the spec's error
// codes, never panics, never starts a task for a tool it does not serve,
// and its reply encodes.
func FuzzTaskRequest(f *testing.F) {
	id := tasks.NewID()
	for _, seed := range []struct {
		method, params, version string
	}{
		{"tasks/get", `{"taskId":"` + id + `"}`, "2025-11-25"},
		{"tasks/get", `{"taskId":"` + id + `","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}`, ""},
		{"tasks/result", `{"taskId":"../x"}`, "2025-11-25"},
		{"tasks/list", `{"cursor":"t1.zzz"}`, "2025-11-25"},
		{"tasks/cancel", `{"taskId":12}`, "2025-11-25"},
		{"tasks/update", `{"taskId":"` + id + `","inputResponses":[]}`, "2026-07-28"},
		{"tools/call", `{"name":"maybe","task":{"ttl":-1}}`, "2025-11-25"},
		{"tools/call", `{"name":"maybe","task":{"ttl":1e300}}`, "2025-11-25"},
		{"tools/call", `{"name":"nope","task":{}}`, "2025-11-25"},
		{"tools/call", `{"name":"always"}`, "2025-06-18"},
		{"tools/call", `{"name":"always","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, ""},
		{"tasks/get", `[]`, "2025-11-25"},
		{"tasks/get", `null`, "2025-11-25"},
	} {
		f.Add(seed.method, []byte(seed.params), seed.version)
	}
	s, _, release := taskServer(f, tasks.Bounds{PerOwner: 4, Total: 8})
	close(release)
	allowed := map[int64]bool{
		jsonrpc.CodeInvalidParams: true, jsonrpc.CodeMethodNotFound: true, jsonrpc.CodeInternalError: true,
		-32021: true, codeServerBusy: true,
	}
	f.Fuzz(func(t *testing.T, method string, params []byte, version string) {
		if !json.Valid(params) {
			return // the transport refuses invalid JSON before this
		}
		reqID, _ := jsonrpc.MakeID(float64(7))
		claim := s.claimTask(&jsonrpc.Request{ID: reqID, Method: method, Params: params},
			taskContext{version: version, principal: principal.Local, peer: "fuzz"})
		if claim == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r := claim(ctx)
		if r.err != nil {
			if !allowed[r.err.Code] {
				t.Fatalf("%s %s: error code %d (%s)", method, params, r.err.Code, r.err.Message)
			}
			return
		}
		if _, err := json.Marshal(r.result); err != nil {
			t.Fatalf("%s %s: reply does not encode: %v", method, params, err)
		}
		if method == MethodCallTool {
			c, _ := parseTaskCall(params)
			if _, ok := s.tasks.supportOf(c.Name); !ok {
				t.Fatalf("a task was started for %q, which the server does not serve", c.Name)
			}
		}
	})
}

// FuzzParseTaskCall: the params parser never panics, and what it accepts
// has a TTL that is not negative.
func FuzzParseTaskCall(f *testing.F) {
	for _, s := range []string{`{"name":"never","Name":"maybe","task":{}}`, `{"name":"a","name":"b"}`, `{"NAME":"x"}`, `{}`, `{"task":{"ttl":5}}`, `{"taskId":"x","_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":null}}}`, `7`, ``, `null`, `{"task":{"ttl":-3}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		c, err := parseTaskCall(params)
		if err != nil {
			return
		}
		if c.Task != nil && c.Task.TTL != nil && *c.Task.TTL < 0 {
			t.Fatalf("negative ttl accepted: %s", params)
		}
		c.declared()
		generationOf(c, "2025-11-25")
		// What it accepts names no member twice nor in another case, and
		// its name is the one the go-sdk's decoder reads.
		var sdk struct {
			Name string `json:"name"`
		}
		if _, err := sdkjson.Parse(params, &sdk, sdkParseFlags); err == nil && sdk.Name != c.Name {
			t.Fatalf("%s: task name %q, the go-sdk reads %q", params, c.Name, sdk.Name)
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(params, &members) == nil {
			var std struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(params, &std) == nil && std.Name != c.Name {
				t.Fatalf("%s: task name %q, a case-insensitive decoder reads %q", params, c.Name, std.Name)
			}
		}
	})
}

// FuzzParamHeaders: the Mcp-Param-* check never panics on any header value
// and arguments, accepts a header equal to a string argument as written,
// and never accepts one for an argument that is absent.
func FuzzParamHeaders(f *testing.F) {
	for _, s := range [][2]string{{"prod", `{"arguments":{"region":"prod"}}`}, {"=?base64?cHJvZA==?=", `{"arguments":{"region":"prod"}}`},
		{"80", `{"arguments":{"n":{"port":80}}}`}, {"1e2", `{"arguments":{"n":{"port":100}}}`}, {"x", `{"arguments":{}}`}, {"", `[]`}} {
		f.Add(s[0], []byte(s[1]))
	}
	bindings := paramHeadersOf(json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"object","properties":{"port":{"type":"integer","x-mcp-header":"Port"}}}}}`))
	if len(bindings) != 2 {
		f.Fatalf("bindings %v", bindings)
	}
	f.Fuzz(func(t *testing.T, value string, params []byte) {
		h := http.Header{}
		h.Set("Mcp-Param-Region", value)
		err := checkParamHeaders(h, params, bindings)
		var p struct {
			Arguments map[string]json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(params, &p) != nil {
			return
		}
		if _, ok := p.Arguments["region"]; !ok && err == nil && h.Get("Mcp-Param-Region") != "" {
			t.Fatalf("%q accepted for an absent region in %s", value, params)
		}
		if v := h.Get("Mcp-Param-Region"); v != "" && utf8.ValidString(v) && !strings.HasPrefix(v, "=?base64?") {
			args, _ := json.Marshal(map[string]any{"arguments": map[string]any{"region": v}})
			if err := checkParamHeaders(h, args, bindings); err != nil {
				t.Fatalf("%q refused for the same region: %v", v, err)
			}
		}
	})
}

// FuzzTaskUpdate feeds a 2026-07-28 tasks/update for a task waiting for
// input arbitrary inputResponses: whatever the bytes, the server answers
// with an acknowledgement or -32602, never panics; an answer it takes is
// for an outstanding key of the task and is a result of that key's
// method; every other key is named as not taken.
func FuzzTaskUpdate(f *testing.F) {
	for _, seed := range []string{
		`{"first":{"action":"accept","content":{}}}`,
		`{"first":{"action":"accept"},"second":{"action":"decline"}}`,
		`{"first":{"roots":[]}}`,
		`{"first":12345}`,
		`{"third":{"ignored":true}}`,
		`{"first":{"action":"accept"},"first":{"action":"decline"}}`,
		`null`, `[]`, `{}`, `"x"`,
	} {
		f.Add([]byte(seed))
	}
	s := inputServer(f, 0)
	tc := taskContext{version: "2026-07-28", principal: principal.Local, peer: "fuzz"}
	claim := func(method string, params map[string]any) *taskReply {
		params["_meta"] = inputMeta
		raw, _ := json.Marshal(params)
		reqID, _ := jsonrpc.MakeID(float64(7))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return s.claimTask(&jsonrpc.Request{ID: reqID, Method: method, Params: raw}, tc)(ctx)
	}
	// A fresh task waiting for "first" and "second".
	waiting := func(t testing.TB) string {
		r := claim("tools/call", map[string]any{"name": "asker"})
		if r.err != nil {
			t.Fatal(r.err)
		}
		id := r.result.(map[string]any)["taskId"].(string)
		for {
			g := claim("tasks/get", map[string]any{"taskId": id})
			if g.err != nil {
				t.Fatal(g.err)
			}
			switch st := g.result.(map[string]any)["status"].(tasks.Status); {
			case st == tasks.InputRequired:
				return id
			case st.Terminal():
				t.Fatalf("the task ended without asking: %+v", g.result)
			}
		}
	}
	f.Fuzz(func(t *testing.T, responses []byte) {
		if !json.Valid(responses) {
			return // the transport refuses invalid JSON before this
		}
		id := waiting(t)
		// Cancelled at the end: the next run starts afresh, and no parked
		// call holds the tool's call slots.
		defer claim("tasks/cancel", map[string]any{"taskId": id})
		r := claim("tasks/update", map[string]any{"taskId": id, "inputResponses": json.RawMessage(responses)})
		if r.err != nil {
			if r.err.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("%s: error %d %q", responses, r.err.Code, r.err.Message)
			}
			return
		}
		raw, err := json.Marshal(r.result)
		if err != nil {
			t.Fatalf("%s: the ack does not encode: %v", responses, err)
		}
		var ack struct {
			ResultType string `json:"resultType"`
			Meta       struct {
				Ignored map[string]string `json:"warden/ignoredInputResponses"`
			} `json:"_meta"`
		}
		if json.Unmarshal(raw, &ack) != nil || ack.ResultType != "complete" {
			t.Fatalf("%s: ack %s", responses, raw)
		}
		var sent map[string]json.RawMessage
		json.Unmarshal(responses, &sent)
		for k := range sent {
			_, ignored := ack.Meta.Ignored[k]
			if outstanding := k == "first" || k == "second"; outstanding == ignored {
				t.Fatalf("%s: key %q taken=%v though outstanding=%v (ack %s)", responses, k, !ignored, outstanding, raw)
			}
		}
	})
}

// FuzzCheckInputResponse: the check every task answer passes
// (CheckInputResponse) never panics, refuses with -32602 (a result of
// another method, no result at all), and what it accepts is JSON that it
// accepts again unchanged: the answer a call gets is one result of the
// request's method, whatever bytes the client sent.
func FuzzCheckInputResponse(f *testing.F) {
	for _, seed := range []string{
		`{"action":"accept","content":{"n":1}}`, `{"action":"decline"}`, `{"roots":[]}`,
		`{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`,
		`[1,2]`, `null`, `12345`, `"x"`, `{}`, `{"k":1},"k":{"action":"accept"}`, ``,
		`{"_meta":{"warden/clientError":{"code":-1,"message":"no"}}}`, `{"_meta":{"warden/clientError":{"code":"x"}}}`,
	} {
		for _, method := range []string{tool.MethodElicit, tool.MethodSample, tool.MethodRoots, "other/method"} {
			f.Add(method, []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, method string, answer []byte) {
		req := tasks.InputRequest{Key: "k@1", Method: method}
		out, err := CheckInputResponse(req, answer)
		if err != nil {
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("%s %q: refused with %v", method, answer, err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("%s %q: accepted as %q, not JSON", method, answer, out)
		}
		again, err := CheckInputResponse(req, out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("%s %q: accepted as %s, then %s, %v", method, answer, out, again, err)
		}
	})
}
