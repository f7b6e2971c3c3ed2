package runtime_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
)

// watFixture is a hand-written tool module: ABI boilerplate around a call
// body. Called with {} it answers "pong"; called with {"fail":true} it runs
// failBody, so one module shows both that a failure is classified and that
// the next call works.
type watFixture struct {
	name     string
	failBody string // instructions run on {"fail":true}; must leave nothing on the stack
	imports  string // extra (import ...) forms
	funcs    string // extra module fields
	schema   string // inputSchema; default accepts anything
	meta     string // more descriptor fields, each followed by a comma
}

func (f watFixture) wat() string {
	schema := f.schema
	if schema == "" {
		schema = `{"type":"object"}`
	}
	desc := fmt.Sprintf(`{"tools":[{"name":%q,%s"description":"fixture","inputSchema":%s}]}`, f.name, f.meta, schema)
	pong := `{"content":[{"type":"text","text":"pong"}]}`
	// The request for {} is exactly this long; anything longer carries "fail".
	plain := len(fmt.Sprintf(`{"tool":%q,"arguments":{}}`, f.name))
	return fmt.Sprintf(`(module
  %s
  (memory (export "memory") 1)
  (global $next (mut i32) (i32.const 4096))
  (global $zero (mut i32) (i32.const 0))
  (global $minus1 (mut i32) (i32.const -1))
  (func (export "warden_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $next))
    (global.set $next (i32.add (global.get $next) (local.get $size)))
    (local.get $ptr))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (data (i32.const 16) %s)
  (data (i32.const 2048) %s)
  (func (export "warden_describe") (result i64) (i64.const %d))
  %s
  (func (export "warden_call") (param $request i64) (result i64)
    (if (i32.gt_u (i32.wrap_i64 (local.get $request)) (i32.const %d))
      (then %s))
    (i64.const %d)))`,
		f.imports, watString(desc), watString(pong), pack(16, len(desc)), f.funcs, plain, f.failBody, pack(2048, len(pong)))
}

func (f watFixture) build(t testing.TB) []byte {
	t.Helper()
	return testwasm.WATString(t, f.wat())
}

func pack(ptr, size int) uint64 { return uint64(ptr)<<32 | uint64(size) }

func watString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range []byte(s) {
		if c == '"' || c == '\\' || c < 0x20 || c > 0x7e {
			b.WriteString(`\` + strconv.FormatUint(uint64(c)|0x100, 16)[1:])
		} else {
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func watBytes(t testing.TB, src string) []byte {
	t.Helper()
	return testwasm.WATString(t, src)
}
