package runtime_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/calltime"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// TestDeadlineCountsQueueWait: a call's deadline started when it arrived,
// so what it waited for a slot in the MCP layer is spent: a call that
// waited its whole timeout fails with kind timeout naming the wait, without
// running, and the next call works.
func TestDeadlineCountsQueueWait(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	fx := watFixture{name: "queued", failBody: "unreachable"}
	tl := loadTool(t, rt, fx.name, fx.build(t), runtime.Limits{Timeout: time.Hour})
	ctx := calltime.WithQueueWait(context.Background(), time.Hour)
	res := tl.Call(ctx, runtime.CallRequest{Arguments: json.RawMessage(`{}`)})
	e := wantKind(t, res, tool.KindTimeout)
	if want := "queued did not finish within 1h0m0s (while waiting 1h0m0s for a call slot)"; e.Message != want {
		t.Errorf("message = %q, want %q", e.Message, want)
	}
	if _, ran := res.Meta[tool.MetaFuel]; ran {
		t.Errorf("the call ran: %v", res.Meta)
	}
	wantOK(t, call(t, tl, `{}`), "pong")
}
