package catalog_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/catalog"
	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
)

// registryModule is one module of a registry scenario.
type registryModule struct {
	name   string
	pinned bool
	tools  []string
}

// outcome is everything a registry decides, in a form to compare.
func outcome(g *catalog.Table) string {
	var b strings.Builder
	for _, t := range g.Tools() {
		fmt.Fprintf(&b, "serve %s from %s\n", t.Descriptor.Name, t.Module().Name())
	}
	for _, r := range g.Refused() {
		fmt.Fprintf(&b, "refuse %s of %s (modules %v, served by %q): %s\n", r.Tool, r.Module, r.Modules, r.ServedBy, r.Reason)
	}
	return b.String()
}

func loadModules(t *testing.T, specs []registryModule) map[string]*runtime.Module {
	t.Helper()
	rt := newRuntime(t, runtime.Options{})
	mods := make(map[string]*runtime.Module)
	for _, s := range specs {
		m, err := rt.Load(context.Background(), s.name, testwasm.DescribingWAT(t, s.tools...), runtime.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		mods[s.name] = m
	}
	return mods
}

// permutations calls f with every ordering of n indexes.
func permutations(n int, f func([]int)) {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			f(slices.Clone(p))
			return
		}
		for i := k; i < n; i++ {
			p[k], p[i] = p[i], p[k]
			rec(k + 1)
			p[k], p[i] = p[i], p[k]
		}
	}
	rec(0)
}

// TestRegistryDecisionTable loads the same modules in every order (720 of
// them) and checks that the tool table is always the same: the pinned echo
// serves "echo" and the unpinned impostor's "echo" is refused; "READER"
// and "reader" collide ignoring case and, neither being pinned, are both
// refused; two pinned modules describing "dup" are both refused; every
// tool without a rival is served.
func TestRegistryDecisionTable(t *testing.T) {
	specs := []registryModule{
		{"echo", true, []string{"echo", "only_echo"}},
		{"aaa-evil", false, []string{"echo", "evil_own"}},
		{"shouty", false, []string{"READER"}},
		{"reader", false, []string{"reader"}},
		{"pair1", true, []string{"dup"}},
		{"pair2", true, []string{"dup", "Solo"}},
	}
	mods := loadModules(t, specs)
	want := ""
	orders := 0
	permutations(len(specs), func(order []int) {
		g := catalog.NewTable()
		for _, i := range order {
			g.Put(mods[specs[i].name], specs[i].pinned)
		}
		got := outcome(g)
		orders++
		if want == "" {
			want = got
			return
		}
		if got != want {
			t.Fatalf("load order %v gives\n%s\nanother order gave\n%s", order, got, want)
		}
	})
	if orders != 720 {
		t.Fatalf("tried %d orders", orders)
	}
	t.Logf("the outcome of all %d orders:\n%s", orders, want)

	g := catalog.NewTable()
	for _, s := range specs {
		g.Put(mods[s.name], s.pinned)
	}
	served := map[string]string{}
	for _, tl := range g.Tools() {
		served[tl.Descriptor.Name] = tl.Module().Name()
	}
	wantServed := map[string]string{"echo": "echo", "only_echo": "echo", "evil_own": "aaa-evil", "Solo": "pair2"}
	if fmt.Sprint(served) != fmt.Sprint(wantServed) {
		t.Fatalf("served %v, want %v", served, wantServed)
	}
	type key struct{ tool, module string }
	refused := map[key]catalog.Refusal{}
	for _, r := range g.Refused() {
		refused[key{r.Tool, r.Module}] = r
	}
	if len(refused) != 5 {
		t.Fatalf("refused %v, want 5 refusals", g.Refused())
	}
	for k, want := range map[key][]string{
		{"echo", "aaa-evil"}: {"it is also described by module echo;", "only module echo is pinned (tools.pins.echo)", "remove aaa-evil.wasm", "rename its tool"},
		{"READER", "shouty"}: {`"reader" by module reader, "READER" by module shouty`, "ignoring case", "none of them is pinned", "pin the one you reviewed"},
		{"reader", "reader"}: {"none of them is pinned"},
		{"dup", "pair1"}:     {"2 of them are pinned", "keep one"},
		{"dup", "pair2"}:     {"2 of them are pinned"},
	} {
		r, ok := refused[k]
		if !ok {
			t.Fatalf("no refusal of %v in %v", k, g.Refused())
		}
		for _, w := range want {
			if !strings.Contains(r.Reason, w) {
				t.Errorf("refusal of %v: %q lacks %q", k, r.Reason, w)
			}
		}
	}
	if r := refused[key{"echo", "aaa-evil"}]; r.ServedBy != "echo" || !slices.Equal(r.Modules, []string{"aaa-evil", "echo"}) {
		t.Errorf("echo refusal %+v", r)
	}
	if got := g.RefusedAs("ReAdEr"); len(got) != 2 {
		t.Errorf("RefusedAs(ReAdEr) = %v", got)
	}
	if got := g.Candidates("ECHO"); len(got) != 2 || got[0].Module().Name() != "aaa-evil" || got[1].Module().Name() != "echo" {
		t.Errorf("Candidates(ECHO) = %v", got)
	}
	if _, ok := g.Tool("READER"); ok {
		t.Error("READER is served")
	}
	// The served tool is the pinned module's: a call reaches it.
	tl, _ := g.Tool("echo")
	if res := tl.Call(context.Background(), runtime.CallRequest{}); res.IsError || tl.Module() != mods["echo"] {
		t.Fatalf("echo: %+v from %s", res, tl.Module().Name())
	}
}

// TestRegistryHotReload walks the changes a watched tools dir makes, and
// checks the invariant after each: an impostor added later cannot displace
// a pinned tool; removing one side of a collision serves the other again; a
// pin added or removed by a config change decides again.
func TestRegistryHotReload(t *testing.T) {
	mods := loadModules(t, []registryModule{
		{name: "echo", tools: []string{"echo"}},
		{name: "aaa-evil", tools: []string{"Echo", "evil_own"}},
	})
	g := catalog.NewTable()
	serves := func(step, name, module string) {
		t.Helper()
		tl, ok := g.Tool(name)
		switch {
		case module == "" && ok:
			t.Fatalf("%s: %s is served by %s, want refused", step, name, tl.Module().Name())
		case module != "" && (!ok || tl.Module().Name() != module):
			t.Fatalf("%s: %s not served by %s:\n%s", step, name, module, outcome(g))
		}
	}

	if _, refused := g.Put(mods["echo"], true); len(refused) != 0 {
		t.Fatalf("refused %v", refused)
	}
	serves("pinned echo alone", "echo", "echo")

	_, refused := g.Put(mods["aaa-evil"], false)
	if len(refused) != 1 || refused[0].Module != "aaa-evil" || refused[0].Tool != "Echo" {
		t.Fatalf("impostor added: refused %v", refused)
	}
	serves("impostor added", "echo", "echo")
	serves("impostor added", "Echo", "")
	serves("impostor added", "evil_own", "aaa-evil")

	if !g.Pinned(mods["echo"]) || g.Pinned(mods["aaa-evil"]) {
		t.Fatal("Pinned() does not reflect Put")
	}
	if !g.SetPinned("echo", false) {
		t.Fatal("SetPinned changed nothing")
	}
	serves("pin removed", "echo", "")
	serves("pin removed", "Echo", "")
	if len(g.Refused()) != 2 {
		t.Fatalf("pin removed: refused %v", g.Refused())
	}
	if g.SetPinned("echo", false) {
		t.Fatal("SetPinned to the same value reported a change")
	}
	g.SetPinned("echo", true)
	serves("pin restored", "echo", "echo")

	if m := g.Remove("echo"); m != mods["echo"] {
		t.Fatal("Remove did not return the module")
	}
	serves("pinned echo removed", "Echo", "aaa-evil")
	if len(g.Refused()) != 0 {
		t.Fatalf("pinned echo removed: refused %v", g.Refused())
	}

	g.Put(mods["echo"], true)
	serves("pinned echo back", "echo", "echo")
	serves("pinned echo back", "Echo", "")

	// Replacing the pinned module by a version without the tool (a hot
	// reload of echo.wasm, the same module name) leaves the impostor the
	// only candidate.
	replaced, _ := g.Put(reloadAs(t, "echo", "other"), true)
	if replaced != mods["echo"] {
		t.Fatal("Put did not return the replaced module")
	}
	serves("echo reloaded without the tool", "Echo", "aaa-evil")
	serves("echo reloaded without the tool", "other", "echo")
	// Dropping the old version (a pin that stopped matching it) must not
	// drop the version that replaced it.
	if g.RemoveIf("echo", mods["echo"]) {
		t.Fatal("RemoveIf removed the version that replaced the one named")
	}
	serves("RemoveIf of a replaced version", "other", "echo")

	g.Remove("aaa-evil")
	serves("impostor removed", "Echo", "")
	if len(g.Refused()) != 0 || g.Remove("aaa-evil") != nil {
		t.Fatalf("impostor removed: refused %v", g.Refused())
	}
}

// TestRegistryCollision: a Go guest describing the name of a pinned
// module's tool is refused, and the pinned tool keeps serving.
func TestRegistryCollision(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	reg := catalog.NewTable()
	load := func(name string, wasm []byte) *runtime.Module {
		m, err := rt.Load(context.Background(), name, wasm, runtime.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	echoMod := load("echo", testwasm.BuildGo(t, "../../tools-wasm/echo"))
	reg.Put(echoMod, true)
	_, refused := reg.Put(load("dupname", testwasm.BuildGo(t, "../../runtime/testdata/goguest/dupname")), false)
	if len(refused) != 1 || refused[0].Module != "dupname" || refused[0].ServedBy != "echo" ||
		!strings.Contains(refused[0].Reason, `only module echo is pinned`) {
		t.Fatalf("refused = %v", refused)
	}
	if tl, _ := reg.Tool("echo"); tl.Module() != echoMod {
		t.Fatal("the colliding module replaced the pinned tool")
	}
}

func reloadAs(t *testing.T, module string, tools ...string) *runtime.Module {
	t.Helper()
	m, err := newRuntime(t, runtime.Options{}).Load(context.Background(), module, testwasm.DescribingWAT(t, tools...), runtime.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// newRuntime is a runtime with no compilation cache, closed with the test.
func newRuntime(t testing.TB, opts runtime.Options) *runtime.Runtime {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = "off"
	}
	rt, err := runtime.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}
