package runtime_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// TestToolNameRules: names outside the safe set are rejected at load with
// the rule in the message, and one module may not describe two names that
// differ only in case.
func TestToolNameRules(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	m, err := rt.Load(context.Background(), "names",
		testwasm.DescribingWAT(t, ".", "..", "-flag", "_x", ".hidden", "a/b", strings.Repeat("a", 129), "ok", "OK", "a.b-c_d", strings.Repeat("z", 128)),
		runtime.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	for _, tl := range m.Tools() {
		served = append(served, tl.Descriptor.Name)
	}
	if !slices.Equal(served, []string{"ok", "a.b-c_d", strings.Repeat("z", 128)}) {
		t.Fatalf("tools %v", served)
	}
	rejected := map[string]string{}
	for _, r := range m.Rejected() {
		rejected[r.Name] = r.Reason.Error()
	}
	for _, name := range []string{".", "..", "-flag", "_x", ".hidden", "a/b", strings.Repeat("a", 129)} {
		if !strings.Contains(rejected[name], tool.NameRule) {
			t.Errorf("%q: rejection %q lacks the rule", name, rejected[name])
		}
	}
	if !strings.Contains(rejected["OK"], "unique ignoring case") {
		t.Errorf(`"OK": rejection %q`, rejected["OK"])
	}
	// A module of only bad names fails to load, naming them.
	if _, err := rt.Load(context.Background(), "dots", testwasm.DescribingWAT(t, ".", ".."), runtime.Limits{}); err == nil ||
		!strings.Contains(err.Error(), `name "."`) || !strings.Contains(err.Error(), `name ".."`) {
		t.Fatalf("load of . and ..: %v", err)
	}
	for name, want := range map[string]bool{"echo": true, "aaa-evil": true, "v1.2": true, "A": true,
		".": false, "..": false, "": false, ".x": false, "-x": false, "a b": false, "a/b": false, "é": false} {
		if runtime.ValidModuleName(name) != want {
			t.Errorf("ValidModuleName(%q) = %v", name, !want)
		}
	}
}
