package tool

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestMetaKeysAreWardens: every key warden puts on the wire begins
// ReservedPrefix (what hostfuncs/client refuses in a tool's keys), and no two
// facts share a key.
func TestMetaKeysAreWardens(t *testing.T) {
	keys := []string{
		MetaVersion, MetaTags, MetaCategory, MetaCapabilities, MetaTimeoutMs, MetaPaginates,
		MetaKind, MetaTrap, MetaExitCode, MetaDuration, MetaFuel, MetaFreshState,
		MetaNextCursor, MetaCursor, MetaRetryAfter, MetaGate, MetaNotices,
		MetaLoading, MetaRefused, MetaIncomplete, MetaQuestion, MetaConfig, KeyConfirm, KeyPermission,
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if !strings.HasPrefix(k, ReservedPrefix) || seen[k] {
			t.Errorf("key %q: not warden's, or used twice", k)
		}
		seen[k] = true
	}
}

// TestOutcomePutMeta: a call's outcome and failure become the _meta a client
// reads, fuel and fresh state only when the guest ran.
func TestOutcomePutMeta(t *testing.T) {
	code := uint32(3)
	for _, tc := range []struct {
		o    Outcome
		err  *Error
		want string
	}{
		{Outcome{Duration: 1500 * time.Microsecond}, nil, `{"warden/durationMs":1.5}`},
		{Outcome{Duration: time.Millisecond, Ran: true, Fuel: 42}, nil, `{"warden/durationMs":1,"warden/fuel":42}`},
		{Outcome{Ran: true, Fuel: 7, FreshState: "evicted"}, &Error{Kind: KindTrapped, Trap: TrapUnreachable},
			`{"warden/durationMs":0,"warden/fresh_state":"evicted","warden/fuel":7,"warden/kind":"trapped","warden/trap":"unreachable"}`},
		{Outcome{}, &Error{Kind: KindGuestExit, ExitCode: &code}, `{"warden/durationMs":0,"warden/exitCode":3,"warden/kind":"guest_exit"}`},
	} {
		meta := map[string]any{}
		tc.o.PutMeta(meta, tc.err)
		got, _ := json.Marshal(meta)
		if string(got) != tc.want {
			t.Errorf("%+v, %v: _meta = %s, want %s", tc.o, tc.err, got, tc.want)
		}
	}
}
