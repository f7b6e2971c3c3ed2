package runtime_test

import (
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
)

func TestGoEcho(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	tl := loadTool(t, rt, "echo", testwasm.BuildGo(t, "../tools-wasm/echo"), runtime.Limits{})
	for range 3 {
		res := call(t, tl, `{"text":"hello"}`)
		wantOK(t, res, "hello")
		if string(res.StructuredContent) != `{"text":"hello"}` {
			t.Fatalf("structured = %s", res.StructuredContent)
		}
	}
}
