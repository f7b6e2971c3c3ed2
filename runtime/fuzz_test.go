package runtime_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tetratelabs/wazero/api"

	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// FuzzGuestResponse feeds the call path arbitrary guest output: the packed
// range warden_call returns (any pointer, any length) and the bytes at it.
// Whatever the guest returns, the host answers with a Result, never panics,
// reads nothing outside guest memory, and the next call still works.
func FuzzGuestResponse(f *testing.F) {
	// The fixture returns the range held in its exported global "ret", which
	// the test sets before each call, over memory the test fills.
	src := `(module
  (memory (export "memory") 1)
  (global $ret (export "ret") (mut i64) (i64.const 0))
  (global $next (mut i32) (i32.const 32768))
  (func (export "warden_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $next))
    (global.set $next (i32.add (global.get $next) (local.get $size)))
    (local.get $ptr))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (data (i32.const 16) "{\"tools\":[{\"name\":\"f\",\"description\":\"fuzz\",\"inputSchema\":{\"type\":\"object\"}}]}")
  (func (export "warden_describe") (result i64) (i64.const 0x100000004d))
  (func (export "warden_call") (param i64) (result i64) (global.get $ret)))`
	rt := newRuntime(f, runtime.Options{})
	tl := loadTool(f, rt, "f", watBytes(f, src), runtime.Limits{Isolation: runtime.IsolationShared, MaxInstances: 1, MaxOutput: 4096})

	f.Add(uint32(1024), uint32(2), []byte(`{}`))
	f.Add(uint32(1024), uint32(0), []byte(nil))
	f.Add(uint32(0xfffffff0), uint32(64), []byte(`{}`))
	f.Add(uint32(65530), uint32(20), []byte(`{"content":[]}`))
	f.Add(uint32(1024), uint32(5000), []byte(`{"content":[{"type":"text","text":"x"}]}`))
	f.Add(uint32(1024), uint32(40), []byte(`{"content":[{"type":"image","data":"!!"}],"error":{"kind":"x"}}`))
	f.Add(uint32(1024), uint32(30), []byte(`{"structuredContent":[1,2],"nextCursor":"c"}`))
	f.Fuzz(func(t *testing.T, ptr, size uint32, body []byte) {
		if len(body) > 8192 {
			body = body[:8192]
		}
		inst := runtime.PooledInstance(tl) // a bad response discards the last one
		inst.Memory().Write(1024, body)
		inst.ExportedGlobal("ret").(api.MutableGlobal).Set(uint64(ptr)<<32 | uint64(size))
		res := tl.Call(context.Background(), runtime.CallRequest{Arguments: json.RawMessage(`{}`)})
		if res == nil {
			t.Fatal("nil result")
		}
		if res.IsError != (res.Error != nil) {
			t.Fatalf("IsError %v with error %v", res.IsError, res.Error)
		}
		if res.IsError && !res.Error.Kind.Valid() {
			t.Fatalf("invalid kind %q", res.Error.Kind)
		}
		if !res.IsError && size > 4096 {
			t.Fatalf("a %d-byte response passed the 4096-byte limit", size)
		}
		if res.IsError && res.Error.Kind != tool.KindBadOutput && res.Error.Kind != tool.KindFailed &&
			res.Error.Kind != tool.KindInvalidArguments && res.Error.Kind != tool.KindNotFound &&
			res.Error.Kind != tool.KindDenied && res.Error.Kind != tool.KindCancelled {
			t.Fatalf("unexpected kind %s: %v", res.Error.Kind, res.Error)
		}
	})
}
