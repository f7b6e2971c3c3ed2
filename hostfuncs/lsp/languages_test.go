package lsp

import (
	"testing"

	"github.com/warden-run/warden/tool"
)

// TestLanguagesOp: a tool learns the languages it may ask about, granted
// and configured, in grant order, and nothing else; without an lsp grant
// it is denied; no server starts.
func TestLanguagesOp(t *testing.T) {
	m := newManager(t, Config{})
	root := t.TempDir()
	c, err := NewCapability(m, func() string { return root }, fakeGate{allow: []string{""}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := serve(t, c, []string{"python", "cobol", "go"}, `{"op":"languages"}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"languages":[{"name":"python","extensions":[".py",".pyi"]},{"name":"go","extensions":[".go"]}]}`; got != want {
		t.Fatalf("languages:\n got %s\nwant %s", got, want)
	}
	_, err = serve(t, c, nil, `{"op":"languages"}`)
	wantKind(t, err, tool.KindDenied, "tool probe is not granted lsp access")
	if n := len(m.Servers()); n != 0 {
		t.Fatalf("the languages op started %d servers", n)
	}
}

// TestCppServesHeaders: a .h file (c's) asked about by a tool granted only
// cpp goes to the cpp language, which runs the same command; a tool
// granted only python is denied it, naming c.
func TestCppServesHeaders(t *testing.T) {
	m := newManager(t, Config{})
	c, err := NewCapability(m, func() string { return "/nonexistent" }, fakeGate{allow: []string{""}})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := parseRequest([]byte(`{"op":"documentSymbol","path":"include/a.h"}`))
	lang, err := c.language(callWith("cpp"), req)
	if err != nil || lang != "cpp" {
		t.Fatalf("cpp tool, a.h: %q, %v", lang, err)
	}
	if _, err := m.checkFile(Target{Language: "cpp", Root: "/x"}, "include/a.h"); err != nil {
		t.Fatalf("cpp server refuses a.h: %v", err)
	}
	_, err = c.language(callWith("python"), req)
	wantKind(t, err, tool.KindDenied, "not granted lsp access to c")
	if _, err := m.checkFile(Target{Language: "python", Root: "/x"}, "a.h"); err == nil {
		t.Fatal("a python server takes a.h")
	}
}
