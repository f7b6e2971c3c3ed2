package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/tool"
)

func ptr[T any](v T) *T { return &v }

func TestListToolsPaginatesInNameOrderAndMapsEveryField(t *testing.T) {
	full := tool.Descriptor{
		Name:          "full",
		Title:         "Full Tool",
		Description:   "has every field",
		InputSchema:   json.RawMessage(`{"type":"object","$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a"}},"additionalProperties":false}`),
		OutputSchema:  json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		Annotations:   &tool.Annotations{ReadOnlyHint: ptr(true), OpenWorldHint: ptr(false)},
		Version:       "1.2.3",
		Tags:          []string{"a", "b"},
		Category:      "files",
		Icons:         []tool.Icon{{Src: "data:image/png;base64,AA==", MimeType: "image/png", Sizes: []string{"16x16"}, Theme: "dark"}},
		TimeoutMillis: 1500,
		Paginates:     true,
		Capabilities:  tool.Capabilities{FS: tool.FSAccess{Read: []string{"src"}}, LSP: []string{"go"}},
	}
	badSchema := desc("bad-schema")
	badSchema.InputSchema = json.RawMessage(`{"type":"string"}`)
	noDescription := desc("no-description")
	noDescription.Description = ""
	tools := newFakeTools(desc("g"), desc("b"), full, desc("e"), desc("a"), badSchema, desc("c"), noDescription, desc("d"))

	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			s, logs := newServer(t, tools, Options{PageSize: 3})
			cs := connect(t, s, tr, nil)
			ctx := context.Background()

			var names []string
			var pages int
			var cursor string
			var got map[string]*mcp.Tool = map[string]*mcp.Tool{}
			for {
				res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
				if err != nil {
					t.Fatalf("ListTools page %d: %v", pages, err)
				}
				pages++
				if len(res.Tools) > 3 {
					t.Fatalf("page %d has %d tools, page size is 3", pages, len(res.Tools))
				}
				for _, tl := range res.Tools {
					names = append(names, tl.Name)
					got[tl.Name] = tl
				}
				if res.NextCursor == "" {
					break
				}
				cursor = res.NextCursor
			}
			if want := []string{"a", "b", "c", "d", "e", "full", "g"}; !reflect.DeepEqual(names, want) {
				t.Fatalf("tools %v, want %v (sorted, invalid ones left out)", names, want)
			}
			if pages != 3 {
				t.Errorf("%d pages, want 3", pages)
			}
			for _, bad := range []string{"bad-schema", "no-description"} {
				if !strings.Contains(logs.String(), `"skipping invalid tool" tool=`+bad) {
					t.Errorf("no log line for skipped tool %s", bad)
				}
			}

			f := got["full"]
			if f.Title != "Full Tool" || f.Description != "has every field" {
				t.Errorf("title/description = %q/%q", f.Title, f.Description)
			}
			assertJSON(t, "inputSchema", f.InputSchema, string(full.InputSchema))
			assertJSON(t, "outputSchema", f.OutputSchema, string(full.OutputSchema))
			if a := f.Annotations; a == nil || !a.ReadOnlyHint || a.IdempotentHint || a.OpenWorldHint == nil || *a.OpenWorldHint || a.DestructiveHint != nil {
				t.Errorf("annotations = %+v", f.Annotations)
			}
			if want := []mcp.Icon{{Source: "data:image/png;base64,AA==", MIMEType: "image/png", Sizes: []string{"16x16"}, Theme: "dark"}}; !reflect.DeepEqual(f.Icons, want) {
				t.Errorf("icons = %+v", f.Icons)
			}
			assertJSON(t, "_meta", map[string]any(f.Meta), `{
				"warden/version": "1.2.3", "warden/tags": ["a","b"], "warden/category": "files",
				"warden/capabilities": {"fs": {"read": ["src"]}, "lsp": ["go"]},
				"warden/timeoutMs": 1500, "warden/paginates": true}`)
			if got["a"].Meta != nil || got["a"].Annotations != nil || got["a"].OutputSchema != nil {
				t.Errorf("a plain tool got extra fields: %+v", got["a"])
			}
		})
	}
}

// assertJSON compares got, marshaled, with the JSON text want.
func assertJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	gotJSON, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var g, w any
	if err := json.Unmarshal(gotJSON, &g); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if m, ok := g.(map[string]any); ok {
		// The go-sdk stamps its own keys (serverInfo) on 2026-07-28 results.
		for k := range m {
			if strings.HasPrefix(k, "io.modelcontextprotocol/") {
				delete(m, k)
			}
		}
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s = %s, want %s", what, gotJSON, want)
	}
}

func TestCallMapsEveryContentTypeAndStructuredContent(t *testing.T) {
	png := []byte{0x89, 'P', 'N', 'G'}
	wav := []byte("RIFF....WAVE")
	blob := []byte{0, 1, 2, 255}
	tools := newFakeTools(desc("all"))
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		return &tool.Result{
			Content: []tool.Content{
				{Type: tool.ContentText, Text: "hello", Annotations: &tool.ContentAnnotation{Audience: []string{"user"}, Priority: ptr(0.5)}},
				{Type: tool.ContentImage, Data: base64.StdEncoding.EncodeToString(png), MimeType: "image/png"},
				{Type: tool.ContentAudio, Data: base64.RawStdEncoding.EncodeToString(wav), MimeType: "audio/wav"},
				{Type: tool.ContentResourceLink, URI: "file:///a.go", Name: "a.go", Title: "A", Description: "a file", MimeType: "text/x-go", Size: ptr(int64(42))},
				{Type: tool.ContentResource, Resource: &tool.EmbeddedResource{URI: "test://text", MimeType: "text/plain", Text: "embedded"}},
				{Type: tool.ContentResource, Resource: &tool.EmbeddedResource{URI: "test://blob", MimeType: "application/octet-stream", Blob: base64.StdEncoding.EncodeToString(blob)}},
			},
			StructuredContent: json.RawMessage(`{"n":1}`),
			Details:           json.RawMessage(`{"secret":"details-never-sent"}`),
			NextCursor:        "page-2",
			Meta:              map[string]any{"warden/fuel": 1234},
		}, nil
	})
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			s, logs := newServer(t, tools, Options{})
			cs := connect(t, s, tr, nil)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "all"})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError {
				t.Fatalf("isError set: %+v", res)
			}
			want := []mcp.Content{
				&mcp.TextContent{Text: "hello", Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}, Priority: 0.5}},
				&mcp.ImageContent{Data: png, MIMEType: "image/png"},
				&mcp.AudioContent{Data: wav, MIMEType: "audio/wav"},
				&mcp.ResourceLink{URI: "file:///a.go", Name: "a.go", Title: "A", Description: "a file", MIMEType: "text/x-go", Size: ptr(int64(42))},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://text", MIMEType: "text/plain", Text: "embedded"}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://blob", MIMEType: "application/octet-stream", Blob: blob}},
			}
			if len(res.Content) != len(want) {
				t.Fatalf("%d content blocks, want %d", len(res.Content), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(res.Content[i], want[i]) {
					t.Errorf("content[%d] = %#v, want %#v", i, res.Content[i], want[i])
				}
			}
			assertJSON(t, "structuredContent", res.StructuredContent, `{"n":1}`)
			if res.Meta[tool.MetaNextCursor] != "page-2" {
				t.Errorf("_meta = %v, want %s", res.Meta, tool.MetaNextCursor)
			}
			if res.Meta["warden/fuel"] != float64(1234) {
				t.Errorf("_meta = %v, want the runtime's warden/fuel", res.Meta)
			}
			raw, _ := json.Marshal(res)
			if strings.Contains(string(raw), "details-never-sent") {
				t.Errorf("details reached the client: %s", raw)
			}
			if !strings.Contains(logs.String(), "details-never-sent") {
				t.Errorf("details were not logged")
			}
		})
	}
}

func TestCallFailuresAreResultsWithTheirKind(t *testing.T) {
	code := uint32(3)
	cases := []struct {
		err  *tool.Error
		meta string
	}{
		{tool.Errorf(tool.KindInvalidArguments, "text must not be empty"), `{"warden/kind":"invalid_arguments"}`},
		{tool.Errorf(tool.KindDenied, "fs.read not granted"), `{"warden/kind":"denied"}`},
		{tool.Errorf(tool.KindTimeout, "ran past 1s"), `{"warden/kind":"timeout"}`},
		{tool.Errorf(tool.KindOutOfFuel, "fuel"), `{"warden/kind":"out_of_fuel"}`},
		{tool.Errorf(tool.KindOutOfMemory, "memory"), `{"warden/kind":"out_of_memory"}`},
		{&tool.Error{Kind: tool.KindTrapped, Trap: tool.TrapIntegerDivideByZero, Message: "divide"}, `{"warden/kind":"trapped","warden/trap":"integer_divide_by_zero"}`},
		{&tool.Error{Kind: tool.KindGuestExit, ExitCode: &code, Message: "exit"}, `{"warden/kind":"guest_exit","warden/exitCode":3}`},
		{tool.Errorf(tool.KindBadOutput, "not json"), `{"warden/kind":"bad_output"}`},
		{tool.Errorf(tool.KindCancelled, "cancelled"), `{"warden/kind":"cancelled"}`},
		{&tool.Error{Kind: "made_up", Message: "odd"}, `{"warden/kind":"internal"}`},
	}
	tools := newFakeTools(desc("fail"))
	var mu sync.Mutex
	var current *tool.Error
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		r := tool.ErrorResult(current)
		r.Details = json.RawMessage(`{"stack":"details-never-sent"}`)
		return r, nil
	})
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			s, _ := newServer(t, tools, Options{})
			cs := connect(t, s, tr, nil)
			for _, tc := range cases {
				mu.Lock()
				current = tc.err
				mu.Unlock()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fail"})
				if err != nil {
					t.Fatalf("%s: protocol error %v, want an error result", tc.err.Kind, err)
				}
				if !res.IsError {
					t.Errorf("%s: isError not set", tc.err.Kind)
				}
				assertJSON(t, string(tc.err.Kind)+" _meta", map[string]any(res.Meta), tc.meta)
				if len(res.Content) != 1 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, tc.err.Message) {
					t.Errorf("%s: content %+v does not carry the message", tc.err.Kind, res.Content)
				}
				raw, _ := json.Marshal(res)
				if strings.Contains(string(raw), "details-never-sent") {
					t.Errorf("details reached the client: %s", raw)
				}
			}
			// An error result without content still gets words for the model.
			mu.Lock()
			current = tool.Errorf(tool.KindFailed, "no content")
			mu.Unlock()
			tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
				return &tool.Result{IsError: true, Error: tool.Errorf(tool.KindFailed, "bare failure")}, nil
			})
			defer tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
				mu.Lock()
				defer mu.Unlock()
				return tool.ErrorResult(current), nil
			})
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fail"})
			if err != nil || !res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "failed: bare failure" {
				t.Errorf("bare failure: %+v, %v", res, err)
			}
		})
	}
}

func TestUnknownToolIsInvalidParams(t *testing.T) {
	tools := newFakeTools(desc("vanishing"), desc("ok"))
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		if c.Name == "vanishing" {
			// Removed from the registry between tools/list and this call.
			return nil, tool.Errorf(tool.KindNotFound, "no tool named %q", c.Name)
		}
		return &tool.Result{Content: []tool.Content{tool.TextContent("ok")}}, nil
	})
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			s, _ := newServer(t, tools, Options{})
			cs := connect(t, s, tr, nil)
			for _, name := range []string{"nope", "vanishing"} {
				_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name})
				var rpcErr *jsonrpc.Error
				if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
					t.Errorf("call %s: error %v, want JSON-RPC error %d", name, err, jsonrpc.CodeInvalidParams)
				}
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ok"})
			if err != nil || res.IsError {
				t.Fatalf("the next call failed: %+v %v", res, err)
			}
		})
	}
}

func TestCallPassesArgumentsCursorAndSession(t *testing.T) {
	tools := newFakeTools(desc("echo"))
	calls := make(chan Call, 4)
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		calls <- c
		return &tool.Result{Content: []tool.Content{tool.TextContent("ok")}}, nil
	})
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			s, _ := newServer(t, tools, Options{})
			cs := connect(t, s, tr, nil)
			ctx := context.Background()
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"},
				Meta: mcp.Meta{tool.MetaCursor: "c-1"}}); err != nil {
				t.Fatal(err)
			}
			c := <-calls
			assertJSON(t, "arguments", c.Arguments, `{"text":"hi"}`)
			if c.Name != "echo" || c.Cursor != "c-1" || c.Observer == nil {
				t.Errorf("call = %+v", c)
			}
			// HTTP sessions carry their Mcp-Session-Id; a one-client
			// transport gets a connection ID from Serve.
			if want := cs.ID(); want != "" && c.Session != want {
				t.Errorf("session %q, want the client's %q", c.Session, want)
			}
			if !tr.http && !strings.HasPrefix(c.Session, "conn-") {
				t.Errorf("stdio session %q, want a connection ID", c.Session)
			}
			if tr.http && tr.protocol != "" && c.Session == "" {
				t.Errorf("an HTTP session call has no session ID")
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo"}); err != nil {
				t.Fatal(err)
			}
			if c := <-calls; string(c.Arguments) != "{}" || c.Cursor != "" {
				t.Errorf("call without arguments = %+v, want arguments {}", c)
			}
		})
	}
}

func TestProgressBecomesMonotonicNotifications(t *testing.T) {
	tools := newFakeTools(desc("work"))
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		for _, p := range []float64{1, 2, 2, 1.5, 3} {
			c.Observer.Progress(tool.Progress{Progress: p, Total: 3, Message: fmt.Sprintf("step %v", p)})
		}
		return &tool.Result{Content: []tool.Content{tool.TextContent("done")}}, nil
	})
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			s, _ := newServer(t, tools, Options{})
			var mu sync.Mutex
			var got []mcp.ProgressNotificationParams
			cs := connect(t, s, tr, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					defer mu.Unlock()
					p := *req.Params
					p.Meta = nil
					got = append(got, p)
				},
			})
			params := &mcp.CallToolParams{Name: "work"}
			params.SetProgressToken("tok-1")
			if _, err := cs.CallTool(context.Background(), params); err != nil {
				t.Fatal(err)
			}
			// Every notification precedes the result, but the client may
			// dispatch them after CallTool returned. They may be coalesced,
			// but never out of order or repeated, and the last one arrives.
			eventually(t, "the last progress notification", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(got) > 0 && got[len(got)-1].Progress == 3
			})
			mu.Lock()
			defer mu.Unlock()
			last := 0.0
			for i, p := range got {
				if p.ProgressToken != "tok-1" || p.Total != 3 || p.Message != fmt.Sprintf("step %v", p.Progress) {
					t.Errorf("notification %d = %+v", i, p)
				}
				if p.Progress <= last {
					t.Errorf("progress went %v -> %v", last, p.Progress)
				}
				last = p.Progress
			}
			if last != 3 {
				t.Errorf("last progress %v, want 3", last)
			}

			// Without a token the client asked for no progress: none is sent.
			got = nil
			mu.Unlock()
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "work"})
			mu.Lock()
			if err != nil || len(got) != 0 {
				t.Errorf("without a progress token: %d notifications, err %v", len(got), err)
			}
		})
	}
}

func TestGuestLogsReachClientAtItsLevelAndStderrAlways(t *testing.T) {
	tools := newFakeTools(desc("chatty"))
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		c.Observer.Log(slog.LevelDebug, "guest-debug")
		c.Observer.Log(slog.LevelInfo, "guest-info")
		c.Observer.Log(slog.LevelWarn, "guest-warning")
		c.Observer.Log(slog.LevelError, "guest-error")
		return &tool.Result{Content: []tool.Content{tool.TextContent("ok")}}, nil
	})
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			s, logs := newServer(t, tools, Options{})
			var mu sync.Mutex
			var got []string
			cs := connect(t, s, tr, &mcp.ClientOptions{
				LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
					mu.Lock()
					defer mu.Unlock()
					got = append(got, fmt.Sprintf("%s %s %v", req.Params.Level, req.Params.Logger, req.Params.Data))
				},
			})
			params := &mcp.CallToolParams{Name: "chatty"}
			if tr.protocol == "" {
				// Stateless: the level travels with each request.
				params.Meta = mcp.Meta{mcp.MetaKeyLogLevel: "warning"}
			} else if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CallTool(context.Background(), params); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the error log notification", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(got) > 0 && strings.HasPrefix(got[len(got)-1], "error")
			})
			mu.Lock()
			defer mu.Unlock()
			if want := []string{"warning tool chatty guest-warning", "error tool chatty guest-error"}; !reflect.DeepEqual(got, want) {
				t.Errorf("client got %q, want %q", got, want)
			}
			for _, line := range []string{"guest-debug", "guest-info", "guest-warning", "guest-error"} {
				if !strings.Contains(logs.String(), "msg="+line+" tool=chatty source=guest") {
					t.Errorf("stderr log lacks %s:\n%s", line, logs.String())
				}
			}
		})
	}
}

// The judgment of a result (missing mimeType, text and blob, ...) is the
// runtime's (tool.Content.Validate, tested with real guests in
// runtime/content_test.go); mapping only refuses what it cannot translate.
func TestMapResultRefusesWhatItCannotSend(t *testing.T) {
	cases := map[string]tool.Result{
		"bad base64 image": {Content: []tool.Content{{Type: "image", Data: "!!!", MimeType: "image/png"}}},
		"unknown type":     {Content: []tool.Content{{Type: "video"}}},
		"no resource":      {Content: []tool.Content{{Type: "resource"}}},
		"bad structured":   {StructuredContent: json.RawMessage(`{"a":`)},
	}
	for name, r := range cases {
		if _, err := mapResult(&r); err == nil {
			t.Errorf("%s: mapped without error", name)
		}
	}
	// Through the server, such a result becomes a bad_output error result.
	s, _ := newServer(t, newFakeTools(), Options{})
	r := cases["bad base64 image"]
	out := s.resultFor("x", &r)
	if !out.IsError || out.Meta[tool.MetaKind] != string(tool.KindBadOutput) {
		t.Errorf("result = %+v, want a bad_output error", out)
	}
}
