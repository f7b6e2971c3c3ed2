package testwasm

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// DescribingWAT is a complete native tool module whose describe lists tools
// with the given names; every call answers "ok". Tests of name tables
// (collisions, refusals, name rules) build their modules with it.
func DescribingWAT(t testing.TB, names ...string) []byte {
	t.Helper()
	return ReplyingWAT(t, "ok", names...)
}

// ReplyingWAT is DescribingWAT whose calls answer reply, as text content.
func ReplyingWAT(t testing.TB, reply string, names ...string) []byte {
	t.Helper()
	var tools []map[string]any
	for _, n := range names {
		tools = append(tools, map[string]any{"name": n, "description": "registry fixture", "inputSchema": map[string]any{"type": "object"}})
	}
	return DescriptorsWAT(t, reply, tools...)
}

// DescriptorsWAT is ReplyingWAT describing exactly the given descriptors
// (as JSON objects), for tests of what a descriptor says.
func DescriptorsWAT(t testing.TB, reply string, tools ...map[string]any) []byte {
	t.Helper()
	desc, err := json.Marshal(map[string]any{"tools": tools})
	if err != nil {
		t.Fatal(err)
	}
	result, err := json.Marshal(map[string]any{"content": []map[string]any{{"type": "text", "text": reply}}})
	if err != nil {
		t.Fatal(err)
	}
	return WATString(t, fmt.Sprintf(`(module
  (memory (export "memory") 1)
  (global $next (mut i32) (i32.const 32768))
  (func (export "warden_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $next))
    (global.set $next (i32.add (global.get $next) (local.get $size)))
    (local.get $ptr))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (data (i32.const 16) %s)
  (data (i32.const 16384) %s)
  (func (export "warden_describe") (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const %d)))
  (func (export "warden_call") (param i64) (result i64)
    (i64.or (i64.shl (i64.const 16384) (i64.const 32)) (i64.const %d))))`,
		watString(string(desc)), watString(string(result)), len(desc), len(result)))
}

// watString quotes s as a WAT string literal, escaping every byte that is
// not printable ASCII.
func watString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range []byte(s) {
		if c == '"' || c == '\\' || c < 0x20 || c > 0x7e {
			fmt.Fprintf(&b, `\%02x`, c)
		} else {
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
