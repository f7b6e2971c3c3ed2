package runtime_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/runtime"
)

// mapped reports whether /proc/self/maps has a mapping starting at base.
func mapped(t *testing.T, base uintptr) bool {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	prefix := fmt.Sprintf("%x-", base)
	for line := range strings.Lines(string(maps)) {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}

// TestClosedInstanceMemoryReturned: when a session ends, the instance it
// kept is closed: its linear memory's region is unmapped at once, and a
// moment later the Runtime gives the rest of what it held (Go heap) back to
// the OS (Options.FreeOSMemory, debug.FreeOSMemory in production).
func TestClosedInstanceMemoryReturned(t *testing.T) {
	trimmed := make(chan struct{}, 1)
	rt := newRuntime(t, runtime.Options{TrimDelay: time.Millisecond, FreeOSMemory: func() {
		select {
		case trimmed <- struct{}{}:
		default: // one pending is enough
		}
	}})
	tl := loadTool(t, rt, "state", goGuest(t, "state"), runtime.Limits{Isolation: runtime.IsolationSession})
	// Trims of the load itself (a checked instance closes) are not this
	// test's: drain them once the load is done.
	drain := func() {
		for {
			select {
			case <-trimmed:
			default:
				return
			}
		}
	}
	if res := tl.Call(context.Background(), runtime.CallRequest{Session: "s"}); res.IsError {
		t.Fatal(res.Error)
	}
	base := runtime.SessionRegion(tl, "s")
	if base == 0 {
		t.Skip("the session's memory is not a mapped region on this platform")
	}
	if !mapped(t, base) {
		t.Fatalf("the session's region %x is not in /proc/self/maps while the session lives", base)
	}
	// The call's release starts a spare instance in the background; were
	// it still being made, its memory could be mapped at the address the
	// session's is about to free, and the check below would see it.
	runtime.WaitSpare(tl.Module())
	drain()
	tl.Module().EndSession(context.Background(), "s")
	if mapped(t, base) {
		t.Errorf("the region %x of a closed instance is still mapped", base)
	}
	<-trimmed // the session's instance closed: memory goes back to the OS
	// The next session's call works.
	if res := tl.Call(context.Background(), runtime.CallRequest{Session: "t"}); res.IsError {
		t.Fatal(res.Error)
	}
}
