package warden_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/warden-run/warden/internal/testwasm"
)

// host is a minimal warden host, enough to drive the SDK's exports and serve
// its imports the way docs/abi.md says the runtime does.
type host struct {
	t   *testing.T
	ctx context.Context
	mod api.Module

	mu       sync.Mutex
	logs     []string
	progress []string
	requests map[string]string
}

// compiled shares compiled modules between the tests' runtimes, and
// between test runs: compiling a Go guest takes longer than all the tests
// here together. (An in-memory cache would not do: closing a runtime evicts
// the modules it compiled.)
var compiled = func() wazero.CompilationCache {
	dir, err := os.UserCacheDir()
	if err != nil {
		return wazero.NewCompilationCache()
	}
	c, err := wazero.NewCompilationCacheWithDir(filepath.Join(dir, "warden-test", "wazero"))
	if err != nil {
		return wazero.NewCompilationCache()
	}
	return c
}()

func pack(ptr, n uint32) uint64 { return uint64(ptr)<<32 | uint64(n) }

func (h *host) read(m api.Module, packed uint64) []byte {
	ptr, n := uint32(packed>>32), uint32(packed)
	b, ok := m.Memory().Read(ptr, n)
	if !ok {
		h.t.Fatalf("range %#x+%d outside memory", ptr, n)
	}
	return bytes.Clone(b)
}

// alloc asks the guest for size bytes, as the host does for a request and,
// re-entrantly from inside an import, for a capability reply.
func (h *host) alloc(ctx context.Context, m api.Module, data []byte) uint64 {
	res, err := m.ExportedFunction("warden_alloc").Call(ctx, uint64(len(data)))
	if err != nil {
		h.t.Fatalf("warden_alloc: %v", err)
	}
	ptr := uint32(res[0])
	if ptr == 0 {
		h.t.Fatalf("warden_alloc(%d) returned 0", len(data))
	}
	if !m.Memory().Write(ptr, data) {
		h.t.Fatalf("write %d bytes at %#x: outside memory", len(data), ptr)
	}
	return pack(ptr, uint32(len(data)))
}

func newHost(t *testing.T, wasm []byte) *host {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(compiled))
	t.Cleanup(func() { r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	h := &host{t: t, ctx: ctx, requests: map[string]string{}}
	b := r.NewHostModuleBuilder("warden").
		NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, level uint32, msg uint64) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.logs = append(h.logs, fmt.Sprintf("%d:%s", level, h.read(m, msg)))
	}).Export("log").
		NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, report uint64) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.progress = append(h.progress, string(h.read(m, report)))
	}).Export("progress")
	for _, name := range []string{"fs", "memory", "lsp", "net", "env", "elicit", "sample", "roots", "ask"} {
		b = b.NewFunctionBuilder().WithFunc(func(ctx context.Context, m api.Module, req uint64) uint64 {
			body := h.read(m, req)
			h.mu.Lock()
			h.requests[name] = string(body)
			h.mu.Unlock()
			var reply string
			if name == "net" {
				reply = `{"error":{"kind":"denied","message":"net is not granted"}}`
			} else {
				// Big enough that the guest must grow its heap to hold it.
				reply = fmt.Sprintf(`{"result":{"capability":%q,"request":%s,"pad":%q}}`,
					name, body, strings.Repeat("p", 256<<10))
			}
			return h.alloc(ctx, m, []byte(reply))
		}).Export(name)
	}
	if _, err := b.Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		t.Fatalf("instantiate: %v", err)
	}
	h.mod = mod
	return h
}

func (h *host) call(request string) []byte {
	h.t.Helper()
	req := h.alloc(h.ctx, h.mod, []byte(request))
	res, err := h.mod.ExportedFunction("warden_call").Call(h.ctx, req)
	if err != nil {
		h.t.Fatalf("warden_call: %v", err)
	}
	return h.read(h.mod, res[0])
}

func buildProbe(t *testing.T) []byte { return testwasm.BuildGo(t, "testdata/probe") }

func TestWasmDescribe(t *testing.T) {
	h := newHost(t, buildProbe(t))
	res, err := h.mod.ExportedFunction("warden_abi_version").Call(h.ctx)
	if err != nil || res[0] != 1 {
		t.Fatalf("warden_abi_version = %v, %v; want 1", res, err)
	}
	res, err = h.mod.ExportedFunction("warden_describe").Call(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(h.read(h.mod, res[0]), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Tools) != 2 || doc.Tools[0].Name != "probe" || doc.Tools[1].Name != "fail" {
		t.Fatalf("tools = %+v, want probe, fail", doc.Tools)
	}
}

// TestWasmCapabilities proves that a capability import can allocate its reply
// through warden_alloc while the import call is in progress, for every
// capability, and that log, progress and error replies arrive intact.
func TestWasmCapabilities(t *testing.T) {
	h := newHost(t, buildProbe(t))
	for round := range 3 { // the module must keep working call after call
		resp := h.call(`{"tool":"probe","callId":"c-1","arguments":{"capabilities":["fs","memory","lsp","net","env"],"key":"K","gc":true}}`)
		var out struct {
			StructuredContent struct {
				CallID string                     `json:"callId"`
				Got    map[string]json.RawMessage `json:"got"`
			} `json:"structuredContent"`
		}
		if err := json.Unmarshal(resp, &out); err != nil {
			t.Fatalf("round %d: response %.200s: %v", round, resp, err)
		}
		if out.StructuredContent.CallID != "c-1" {
			t.Errorf("callId = %q", out.StructuredContent.CallID)
		}
		for _, c := range []string{"fs", "memory", "lsp", "env"} {
			var got struct {
				Capability string            `json:"capability"`
				Request    map[string]string `json:"request"`
				Pad        string            `json:"pad"`
			}
			if err := json.Unmarshal(out.StructuredContent.Got[c], &got); err != nil {
				t.Fatalf("%s: %s: %v", c, out.StructuredContent.Got[c], err)
			}
			if got.Capability != c || got.Request["key"] != "K" || len(got.Pad) != 256<<10 || strings.Trim(got.Pad, "p") != "" {
				t.Errorf("%s reply came back as capability=%q request=%v pad=%d bytes", c, got.Capability, got.Request, len(got.Pad))
			}
			if h.requests[c] != `{"key":"K"}` {
				t.Errorf("%s request = %q", c, h.requests[c])
			}
		}
		if want := `{"error":"denied: net is not granted","kind":"denied"}`; string(out.StructuredContent.Got["net"]) != want {
			t.Errorf("net = %s, want %s", out.StructuredContent.Got["net"], want)
		}
	}
	wantLogs := []string{"1:probe c-1", "1:probe c-1", "1:probe c-1"}
	if fmt.Sprint(h.logs) != fmt.Sprint(wantLogs) {
		t.Errorf("logs = %q, want %q", h.logs, wantLogs)
	}
	wantProgress := `{"progress":1,"total":2,"message":"half"} {"progress":2,"total":2,"message":"done"}`
	if got := strings.Join(h.progress[:2], " "); got != wantProgress {
		t.Errorf("progress = %s, want %s", got, wantProgress)
	}
}

// TestWasmBuffersSurviveGC proves the two lifetimes the ABI needs: a buffer
// from warden_alloc stays valid until the host passes it to warden_call, and
// a response stays valid after warden_call returns, even when the host makes
// the guest allocate (and so collect) in between.
func TestWasmBuffersSurviveGC(t *testing.T) {
	h := newHost(t, buildProbe(t))
	request := `{"tool":"probe","callId":"gc","arguments":{"pad":100000}}`
	reqPtr := uint32(h.alloc(h.ctx, h.mod, []byte(request)) >> 32)
	churn := func() {
		for range 40 {
			h.alloc(h.ctx, h.mod, make([]byte, 1<<20))
		}
	}
	churn()
	res, err := h.mod.ExportedFunction("warden_call").Call(h.ctx, pack(reqPtr, uint32(len(request))))
	if err != nil {
		t.Fatal(err)
	}
	first := h.read(h.mod, res[0])
	churn()
	again := h.read(h.mod, res[0])
	if !bytes.Equal(first, again) {
		t.Fatal("response changed while the host still held it")
	}
	if !bytes.Contains(first, []byte(`"callId":"gc"`)) || !bytes.Contains(first, bytes.Repeat([]byte("x"), 100000)) {
		t.Fatalf("response lost its content: %.200s", first)
	}
}

func TestWasmErrors(t *testing.T) {
	h := newHost(t, buildProbe(t))
	cases := []struct{ request, kind, message string }{
		{`{"tool":"fail","arguments":{"how":"panic"}}`, "failed", "panic: assignment to entry in nil map"},
		{`{"tool":"fail","arguments":{"how":"denied"}}`, "denied", "no access to secrets"},
		{`{"tool":"fail","arguments":{"how":"x"}}`, "failed", `told to fail: "x"`},
		{`{"tool":"nope","arguments":{}}`, "not_found", `this module has no tool "nope"`},
		{`{"tool":"probe","arguments":{"pad":"many"}}`, "invalid_arguments", `argument "pad": expected integer, got JSON string`},
		{`not json`, "failed", "decode request: invalid character 'o' in literal null (expecting 'u')"},
	}
	for _, c := range cases {
		var out struct {
			Error   struct{ Kind, Message string } `json:"error"`
			Details map[string]string              `json:"details"`
		}
		resp := h.call(c.request)
		if err := json.Unmarshal(resp, &out); err != nil {
			t.Fatalf("%s: %s: %v", c.request, resp, err)
		}
		if out.Error.Kind != c.kind || out.Error.Message != c.message {
			t.Errorf("%s: got %s: %s, want %s: %s", c.request, out.Error.Kind, out.Error.Message, c.kind, c.message)
		}
		if c.message == "panic: assignment to entry in nil map" && !strings.Contains(out.Details["stack"], "main.fail.Call") {
			t.Errorf("panic details lack the stack: %v", out.Details)
		}
	}
	// The module still works after all of that.
	if resp := h.call(`{"tool":"probe","arguments":{}}`); !bytes.Contains(resp, []byte(`"structuredContent"`)) {
		t.Fatalf("after errors: %s", resp)
	}
}

func TestWasmRejectsForeignRequestRange(t *testing.T) {
	h := newHost(t, buildProbe(t))
	// Address 64 was never handed out by warden_alloc.
	res, err := h.mod.ExportedFunction("warden_call").Call(h.ctx, pack(64, 10))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"error":{"kind":"failed","message":"request range 0x40+10 was not allocated by warden_alloc"}}`
	if got := h.read(h.mod, res[0]); string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
