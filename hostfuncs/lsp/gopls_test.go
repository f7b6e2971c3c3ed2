package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warden-run/warden/tool"
)

// serve sends req through the capability and returns the reply as JSON.
func serve(t *testing.T, c *Capability, langs []string, req string) (string, error) {
	t.Helper()
	res, err := c.Serve(context.Background(), callWith(langs...), []byte(req))
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), nil
}

// mustServe is serve that fails the test on an error.
func mustServe(t *testing.T, c *Capability, req string) string {
	t.Helper()
	out, err := serve(t, c, []string{"go"}, req)
	if err != nil {
		t.Fatalf("%s: %v", req, err)
	}
	return out
}

func wantKind(t *testing.T, err error, kind tool.Kind, contains string) {
	t.Helper()
	if tool.KindOf(err) != kind {
		t.Fatalf("got error %v (kind %q), want kind %q", err, tool.KindOf(err), kind)
	}
	if !strings.Contains(err.Error(), contains) {
		t.Fatalf("error %q does not mention %q", err, contains)
	}
}

func locationsOf(t *testing.T, reply string) []Location {
	t.Helper()
	var r locationsReply
	if err := json.Unmarshal([]byte(reply), &r); err != nil {
		t.Fatal(err)
	}
	return r.Locations
}

func TestDocumentSymbol(t *testing.T) {
	e := sharedGopls(t)
	got := mustServe(t, e.c, `{"op":"documentSymbol","path":"shapes/shapes.go"}`)
	want := `{"path":"shapes/shapes.go","symbols":[` +
		`{"name":"Shape","kind":"interface","detail":"interface{...}","line":5,"column":6,"endLine":7,"children":[` +
		`{"name":"Area","kind":"method","detail":"func() float64","line":6,"column":2,"endLine":6}]},` +
		`{"name":"Square","kind":"struct","detail":"struct{...}","line":10,"column":6,"endLine":12,"children":[` +
		`{"name":"Side","kind":"field","detail":"float64","line":11,"column":2,"endLine":11}]},` +
		`{"name":"(Square).Area","kind":"method","detail":"func() float64","line":15,"column":17,"endLine":17},` +
		`{"name":"Total","kind":"function","detail":"func(shapes ...Shape) float64","line":20,"column":6,"endLine":26},` +
		// Columns count bytes: "Grüße" is 7 bytes long.
		`{"name":"Grüße","kind":"variable","line":29,"column":5,"endLine":29},` +
		`{"name":"Ünit","kind":"variable","line":29,"column":14,"endLine":29}],"total":6}`
	if got != want {
		t.Fatalf("documentSymbol:\n got %s\nwant %s", got, want)
	}
}

func TestWorkspaceSymbol(t *testing.T) {
	e := sharedGopls(t)
	// The language comes from the tool's only grant.
	got := mustServe(t, e.c, `{"op":"workspaceSymbol","query":"Square"}`)
	want := `{"symbols":[` +
		`{"name":"Square","kind":"struct","container":"example.com/fixture/shapes","path":"shapes/shapes.go","line":10,"column":6,"endLine":10},` +
		`{"name":"Square.Area","kind":"method","container":"example.com/fixture/shapes","path":"shapes/shapes.go","line":15,"column":17,"endLine":15},` +
		`{"name":"Square.Side","kind":"field","container":"example.com/fixture/shapes","path":"shapes/shapes.go","line":11,"column":2,"endLine":11}],"total":3}`
	if got != want {
		t.Fatalf("workspaceSymbol Square:\n got %s\nwant %s", got, want)
	}
	// An offset skips into the same list; total stays the whole list's.
	if got, want := mustServe(t, e.c, `{"op":"workspaceSymbol","query":"Square","offset":2}`),
		`{"symbols":[{"name":"Square.Side","kind":"field","container":"example.com/fixture/shapes","path":"shapes/shapes.go","line":11,"column":2,"endLine":11}],"total":3}`; got != want {
		t.Fatalf("workspaceSymbol Square from offset 2:\n got %s\nwant %s", got, want)
	}
	if got, want := mustServe(t, e.c, `{"op":"workspaceSymbol","query":"Square","offset":9}`), `{"symbols":[],"total":3}`; got != want {
		t.Fatalf("workspaceSymbol Square past the end:\n got %s\nwant %s", got, want)
	}

	// Bias lives in secret/: the server finds it, the tool does not.
	direct, err := e.m.WorkspaceSymbols(context.Background(), e.target(), "Bias")
	if err != nil {
		t.Fatal(err)
	}
	if len(direct) != 1 || direct[0].Path != "secret/secret.go" || direct[0].Line != 7 {
		t.Fatalf("gopls should find Bias in secret/secret.go:7, got %+v", direct)
	}
	if got := mustServe(t, e.c, `{"op":"workspaceSymbol","language":"go","query":"Bias"}`); got != `{"symbols":[],"total":0}` {
		t.Fatalf("workspaceSymbol Bias leaks a denied file: %s", got)
	}
}

func TestDefinition(t *testing.T) {
	e := sharedGopls(t)
	for _, tc := range []struct {
		name   string
		needle string
		n      int
		want   []Location
	}{
		{"function", "Total", 1, []Location{{Path: "shapes/shapes.go", Line: 20, Column: 6, EndLine: 20, EndColumn: 11}}},
		// The query column counts bytes past a non-ASCII name on the same line.
		{"after non-ASCII", "Ünit", 1, []Location{{Path: "shapes/shapes.go", Line: 29, Column: 14, EndLine: 29, EndColumn: 19}}},
		{"non-ASCII", "Grüße", 1, []Location{{Path: "shapes/shapes.go", Line: 29, Column: 5, EndLine: 29, EndColumn: 12}}},
		// Defined in a denied file: dropped.
		{"denied", "Bias", 1, []Location{}},
		// Defined outside the project (the standard library): dropped.
		{"outside root", "Println", 1, []Location{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := position(t, "main.go", tc.needle, tc.n)
			req, _ := json.Marshal(map[string]any{"op": "definition", "path": "main.go", "line": p.Line, "column": p.Column})
			got := locationsOf(t, mustServe(t, e.c, string(req)))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("definition of %s at %+v: got %+v, want %+v", tc.needle, p, got, tc.want)
			}
		})
	}
	// The denied definition exists: the server reports it to warden.
	p := position(t, "main.go", "Bias", 1)
	direct, err := e.m.Definition(context.Background(), e.target(), "main.go", p)
	if err != nil || len(direct) != 1 || direct[0].Path != "secret/secret.go" {
		t.Fatalf("gopls should define Bias in secret/secret.go, got %+v, %v", direct, err)
	}
}

func TestReferences(t *testing.T) {
	e := sharedGopls(t)
	p := position(t, "shapes/shapes.go", "Square", 2) // type Square struct
	req := func(include bool) string {
		b, _ := json.Marshal(map[string]any{"op": "references", "path": "shapes/shapes.go", "line": p.Line, "column": p.Column, "includeDeclaration": include})
		return string(b)
	}
	uses := []Location{
		{Path: "main.go", Line: 11, Column: 15, EndLine: 11, EndColumn: 21},
		{Path: "shapes/shapes.go", Line: 15, Column: 9, EndLine: 15, EndColumn: 15},
		{Path: "shapes/shapes.go", Line: 29, Column: 31, EndLine: 29, EndColumn: 37},
	}
	decl := Location{Path: "shapes/shapes.go", Line: 10, Column: 6, EndLine: 10, EndColumn: 12}
	withDecl := []Location{uses[0], decl, uses[1], uses[2]}

	if got := locationsOf(t, mustServe(t, e.c, req(true))); !reflect.DeepEqual(got, withDecl) {
		t.Fatalf("references with declaration:\n got %+v\nwant %+v", got, withDecl)
	}
	if got := locationsOf(t, mustServe(t, e.c, req(false))); !reflect.DeepEqual(got, uses) {
		t.Fatalf("references without declaration:\n got %+v\nwant %+v", got, uses)
	}
	// secret/secret.go uses Square twice; the server says so, the tool
	// never hears of it.
	direct, err := e.m.References(context.Background(), e.target(), "shapes/shapes.go", p, true)
	if err != nil {
		t.Fatal(err)
	}
	var secret int
	for _, l := range direct {
		if l.Path == "secret/secret.go" {
			secret++
		}
	}
	if secret != 2 || len(direct) != len(withDecl)+2 {
		t.Fatalf("gopls should report 2 references in secret/secret.go, got %+v", direct)
	}
}

func TestHover(t *testing.T) {
	e := sharedGopls(t)
	hover := func(needle string) *Hover {
		t.Helper()
		p := position(t, "main.go", needle, 1)
		b, _ := json.Marshal(map[string]any{"op": "hover", "path": "main.go", "line": p.Line, "column": p.Column})
		var r hoverReply
		if err := json.Unmarshal([]byte(mustServe(t, e.c, string(b))), &r); err != nil {
			t.Fatal(err)
		}
		return r.Hover
	}
	want := &Hover{
		Text:   "func shapes.Total(shapes ...shapes.Shape) float64\nTotal sums the areas of shapes.\n",
		Format: "plaintext",
		Range:  &Location{Path: "main.go", Line: 12, Column: 21, EndLine: 12, EndColumn: 26},
	}
	if got := hover("Total"); !reflect.DeepEqual(got, want) {
		t.Fatalf("hover Total:\n got %+v\nwant %+v", got, want)
	}
	// The standard library is not a project file: its docs are shown.
	if got := hover("Println"); got == nil || !strings.HasPrefix(got.Text, "func fmt.Println(a ...any) (n int, err error)\n") {
		t.Fatalf("hover Println: got %+v", got)
	}
	// Bias's doc comment lives in a denied file: nothing.
	if got := hover("Bias"); got != nil {
		t.Fatalf("hover Bias leaks a denied file: %+v", got)
	}
	p := position(t, "main.go", "Bias", 1)
	direct, err := e.m.Hover(context.Background(), e.target(), "main.go", p)
	if err != nil || direct == nil || !strings.Contains(direct.Text, "Bias is a secret constant.") {
		t.Fatalf("gopls should describe Bias, got %+v, %v", direct, err)
	}
	// Whitespace: no hover, no error.
	if got := mustServe(t, e.c, `{"op":"hover","path":"main.go","line":9,"column":1}`); got != `{"hover":null}` {
		t.Fatalf("hover on a blank line: %s", got)
	}
}

func TestDiagnostics(t *testing.T) {
	e := sharedGopls(t)
	broken := `{"path":"broken/broken.go","line":5,"column":9,"endLine":5,"endColumn":21,"severity":"error",` +
		`"message":"cannot use \"not an int\" (untyped string constant) as int value in return statement","source":"compiler","code":"IncompatibleAssign"}`
	got := mustServe(t, e.c, `{"op":"diagnostics","path":"broken/broken.go"}`)
	if want := `{"diagnostics":[` + broken + `],"complete":true,"total":1}`; got != want {
		t.Fatalf("diagnostics:\n got %s\nwant %s", got, want)
	}
	if got := mustServe(t, e.c, `{"op":"diagnostics","path":"main.go"}`); got != `{"diagnostics":[],"complete":true,"total":0}` {
		t.Fatalf("diagnostics of a clean file: %s", got)
	}

	// secret/oops.go does not compile either; only warden hears of it.
	oops := filepath.Join(e.root, "secret", "oops.go")
	if err := os.WriteFile(oops, []byte("package secret\n\nvar oops int = \"oops\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(oops)
	if _, err := serve(t, e.c, []string{"go"}, `{"op":"diagnostics","path":"secret/oops.go"}`); err == nil {
		t.Fatal("diagnostics of a denied file: no error")
	} else {
		wantKind(t, err, tool.KindDenied, "read secret/oops.go: not granted to tool probe")
	}
	diags, complete, err := e.m.Diagnostics(context.Background(), e.target(), "secret/oops.go")
	if err != nil || !complete || len(diags) != 1 || diags[0].Line != 3 {
		t.Fatalf("gopls should diagnose secret/oops.go:3, got %+v, %v, %v", diags, complete, err)
	}
	// The project-wide list has the broken file, not the denied one.
	all := mustServe(t, e.c, `{"op":"diagnostics","language":"go"}`)
	if !strings.Contains(all, broken) || strings.Contains(all, "secret/") {
		t.Fatalf("project diagnostics: %s", all)
	}

	// Fixing the file on disk is seen on the next query (didChange).
	path := filepath.Join(e.root, "broken", "broken.go")
	orig, _ := os.ReadFile(path)
	defer os.WriteFile(path, orig, 0o644)
	fixed := strings.Replace(string(orig), `"not an int"`, `42`, 1)
	if err := os.WriteFile(path, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mustServe(t, e.c, `{"op":"diagnostics","path":"broken/broken.go"}`); got != `{"diagnostics":[],"complete":true,"total":0}` {
		t.Fatalf("diagnostics after the fix: %s", got)
	}
}

func TestDocumentFollowsDisk(t *testing.T) {
	e := sharedGopls(t)
	dir := filepath.Join(e.root, "scratch")
	os.MkdirAll(dir, 0o755)
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "extra.go")
	names := func() []string {
		t.Helper()
		var r symbolsReply
		json.Unmarshal([]byte(mustServe(t, e.c, `{"op":"documentSymbol","path":"scratch/extra.go"}`)), &r)
		var out []string
		for _, s := range r.Symbols {
			out = append(out, s.Name)
		}
		return out
	}
	write := func(src string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write("package scratch\n\nfunc One() {}\n")
	if got := names(); !reflect.DeepEqual(got, []string{"One"}) {
		t.Fatalf("opened: %v", got)
	}
	write("package scratch\n\nfunc One() {}\n\nfunc Two() {}\n")
	if got := names(); !reflect.DeepEqual(got, []string{"One", "Two"}) {
		t.Fatalf("after an edit: %v", got)
	}
	os.Remove(file)
	_, err := serve(t, e.c, []string{"go"}, `{"op":"documentSymbol","path":"scratch/extra.go"}`)
	wantKind(t, err, tool.KindNotFound, "scratch/extra.go: no such file")
	write("package scratch\n\nfunc Three() {}\n")
	if got := names(); !reflect.DeepEqual(got, []string{"Three"}) {
		t.Fatalf("recreated: %v", got)
	}
}

func TestRequestErrors(t *testing.T) {
	e := sharedGopls(t)
	for _, tc := range []struct {
		req      string
		kind     tool.Kind
		contains string
	}{
		{`{"op":"documentSymbol","path":"nope/x.go"}`, tool.KindNotFound, "nope/x.go: no such file"},
		{`{"op":"definition","path":"main.go","line":99,"column":1}`, tool.KindInvalidArguments, "line 99 is outside main.go (lines 1-15)"},
		{`{"op":"definition","path":"main.go","line":11,"column":40}`, tool.KindInvalidArguments, "column 40 is outside line 11 of main.go (columns 1-30)"},
		{`{"op":"documentSymbol","path":"go.mod","language":"go"}`, tool.KindInvalidArguments, "go.mod is not a go file (.go)"},
		{`{"op":"documentSymbol","path":"go.mod"}`, tool.KindInvalidArguments, "no configured language claims go.mod"},
		{`{"op":"documentSymbol","path":"shapes"}`, tool.KindInvalidArguments, "no configured language claims shapes"},
	} {
		_, err := serve(t, e.c, []string{"go"}, tc.req)
		if err == nil {
			t.Fatalf("%s: no error", tc.req)
		}
		wantKind(t, err, tc.kind, tc.contains)
	}
}

// TestDenied checks that refusals happen before any server starts.
func TestDenied(t *testing.T) {
	root := newFixture(t)
	m, err := NewManager(Config{Languages: goplsLanguages(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c, err := NewCapability(m, func() string { return root }, fakeGate{allow: []string{"shapes", "main.go"}, deny: []string{"shapes/private.go"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		grants   []string
		req      string
		kind     tool.Kind
		contains string
		need     string // the grant a permission prompt may offer, "" for none
	}{
		{nil, `{"op":"documentSymbol","path":"main.go"}`, tool.KindDenied, "tool probe is not granted lsp access (config key tools.grants.probe.lsp, e.g. [go])", "lsp=go"},
		{nil, `not even json`, tool.KindDenied, "tool probe is not granted lsp access", ""},
		{nil, `{"op":"workspaceSymbol","query":"x"}`, tool.KindDenied, "tool probe is not granted lsp access", ""},
		{[]string{"rust"}, `{"op":"documentSymbol","path":"main.go"}`, tool.KindDenied, "tool probe is not granted lsp access to go (config key tools.grants.probe.lsp: add go)", "lsp=go"},
		{[]string{"rust"}, `{"op":"workspaceSymbol","language":"go","query":"x"}`, tool.KindDenied, "not granted lsp access to go", "lsp=go"},
		{[]string{"go"}, `{"op":"documentSymbol","path":"secret/secret.go"}`, tool.KindDenied, "read secret/secret.go: not granted to tool probe", ""},
		{[]string{"go"}, `{"op":"hover","path":"shapes/../secret/secret.go","line":1,"column":1}`, tool.KindDenied, "read secret/secret.go: not granted", ""},
		{[]string{"go"}, `{"op":"references","path":"shapes/private.go","line":1,"column":1}`, tool.KindDenied, "read shapes/private.go: not granted", ""},
		// A file that does not exist is denied just the same: no probing.
		{[]string{"go"}, `{"op":"diagnostics","path":"secret/missing.go"}`, tool.KindDenied, "read secret/missing.go: not granted", ""},
		{[]string{"go"}, `{"op":"documentSymbol","path":"../outside.go"}`, tool.KindInvalidArguments, "stay inside", ""},
		{[]string{"go"}, `{"op":"documentSymbol","path":"/etc/passwd.go"}`, tool.KindInvalidArguments, "stay inside", ""},
		{[]string{"go", "rust"}, `{"op":"workspaceSymbol","query":"x"}`, tool.KindInvalidArguments, "workspaceSymbol needs a language (granted: go, rust)", ""},
		{[]string{"cobol"}, `{"op":"workspaceSymbol","query":"x"}`, tool.KindNotFound, `no language server is configured for "cobol"`, ""},
	} {
		_, err := serve(t, c, tc.grants, tc.req)
		if err == nil {
			t.Fatalf("%v %s: no error", tc.grants, tc.req)
		}
		wantKind(t, err, tc.kind, tc.contains)
		if tc.kind == tool.KindDenied && !strings.Contains(tc.contains, "read ") {
			var te *tool.Error
			errors.As(err, &te)
			got := ""
			if te.Need != nil {
				got = te.Need.Key + "=" + te.Need.Value
			}
			if got != tc.need {
				t.Errorf("%v %s: need %q, want %q", tc.grants, tc.req, got, tc.need)
			}
		}
	}
	m.mu.Lock()
	n := len(m.slots)
	m.mu.Unlock()
	if n != 0 {
		t.Fatalf("refused requests started %d servers", n)
	}
}

// TestKilledServerRestarts kills gopls with SIGKILL; the next query gets a
// new one.
func TestKilledServerRestarts(t *testing.T) {
	root := newFixture(t)
	m, err := NewManager(Config{Languages: goplsLanguages(t), ShutdownGrace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	tg := Target{Language: "go", Root: root}
	ctx := context.Background()
	if _, err := m.DocumentSymbols(ctx, tg, "main.go"); err != nil {
		t.Fatal(err)
	}
	first := serverPID(m, tg)
	if err := killPID(first); err != nil {
		t.Fatal(err)
	}
	// Let the manager notice, so that this is the next query's restart and
	// not the in-flight retry (TestRetryAfterCrash covers that).
	eventually(t, "the manager notices the crash", func() bool { return serverPID(m, tg) == 0 })
	syms, err := m.DocumentSymbols(ctx, tg, "main.go")
	if err != nil {
		t.Fatalf("query after kill -9: %v", err)
	}
	if len(syms) != 1 || syms[0].Name != "main" || syms[0].Line != 10 {
		t.Fatalf("query after kill -9: %+v", syms)
	}
	second := serverPID(m, tg)
	if second == 0 || second == first || !alive(second) {
		t.Fatalf("restarted server pid %d (first %d)", second, first)
	}
	if _, _, _, ok := procStat(first); ok {
		t.Fatalf("killed gopls %d was not reaped", first)
	}
	if starts, failures := slotStats(m, tg); starts != 2 || failures != 1 {
		t.Fatalf("starts %d, failures %d; want 2 and 1", starts, failures)
	}
}

// TestConcurrentStartAndClose: first queries racing start one gopls;
// Close leaves no process behind.
func TestConcurrentStartAndClose(t *testing.T) {
	root := newFixture(t)
	m, err := NewManager(Config{Languages: goplsLanguages(t), ShutdownGrace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCapability(m, func() string { return root }, fakeGate{allow: []string{""}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Serve(context.Background(), callWith("go"), []byte(`{"op":"documentSymbol","path":"shapes/shapes.go"}`))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
	}
	tg := Target{Language: "go", Root: root}
	if starts, _ := slotStats(m, tg); starts != 1 {
		t.Fatalf("%d concurrent first queries started %d servers", n, starts)
	}
	pid := serverPID(m, tg)
	if _, pgrp, _, ok := procStat(pid); !ok || pgrp != pid {
		t.Fatalf("gopls %d should lead its own process group, has %d", pid, pgrp)
	}
	if len(childrenNamed("gopls", sharedPID())) != 1 {
		t.Fatal("no gopls child process found in /proc")
	}

	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := processesOf(pid, 0); len(left) > 0 {
		t.Fatalf("process group %d still has processes after Close: %v", pid, left)
	}
	if left := childrenNamed("gopls", sharedPID()); len(left) > 0 {
		t.Fatalf("gopls children left after Close: %v", left)
	}
	_, err = c.Serve(context.Background(), callWith("go"), []byte(`{"op":"documentSymbol","path":"main.go"}`))
	wantKind(t, err, tool.KindFailed, "shutting down")
	if err := m.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
