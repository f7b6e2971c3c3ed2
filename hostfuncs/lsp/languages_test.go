package lsp

import (
	"fmt"
	"reflect"
	"strings"
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

// TestUTF16Servers: pyright and typescript-language-server count columns
// in UTF-16 units; warden's answers count bytes, past emoji (two units,
// four bytes) and ü (one unit, two bytes) on the same line.
func TestUTF16Servers(t *testing.T) {
	for _, tc := range []struct{ lang, file, src string }{
		{"python", "u.py", "s = \"😀😀\"; Grüße = 1\nprint(s, Grüße)\n"},
		{"typescript", "u.ts", "const s = \"😀😀\"; const Grüße = 1;\nconsole.log(s, Grüße);\n"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			requireServer(t, tc.lang)
			root := t.TempDir()
			writeFile(t, root, tc.file, tc.src)
			m := newManager(t, Config{RequestTimeout: loadingTimeout})
			c, err := NewCapability(m, func() string { return root }, fakeGate{allow: []string{""}})
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(tc.src, "\n")
			decl := strings.Index(lines[0], "Grüße") + 1
			use := strings.Index(lines[1], "Grüße") + 1
			out, err := serve(t, c, []string{tc.lang}, fmt.Sprintf(`{"op":"definition","path":%q,"line":2,"column":%d}`, tc.file, use))
			if err != nil {
				t.Fatal(err)
			}
			want := []Location{{Path: tc.file, Line: 1, Column: decl, EndLine: 1, EndColumn: decl + len("Grüße")}}
			if got := locationsOf(t, out); !reflect.DeepEqual(got, want) {
				t.Fatalf("definition of Grüße: %+v, want %+v", got, want)
			}
		})
	}
}

// TestClangdFallbackFlags: without a compile_commands.json, clangd finds
// the project's headers under include/ through the default language's
// fallbackFlags (-I<root>/include), so a definition in a header is found
// from a source file in another directory.
func TestClangdFallbackFlags(t *testing.T) {
	requireServer(t, "c")
	root := t.TempDir()
	writeFile(t, root, "include/shape.h", "#ifndef SHAPE_H\n#define SHAPE_H\nint area(int side);\n#endif\n")
	writeFile(t, root, "src/main.c", "#include \"shape.h\"\n\nint main(void) { return area(2); }\n")
	m := newManager(t, Config{})
	c, err := NewCapability(m, func() string { return root }, fakeGate{allow: []string{""}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := serve(t, c, []string{"c"}, `{"op":"definition","path":"src/main.c","line":3,"column":25}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Location{{Path: "include/shape.h", Line: 3, Column: 5, EndLine: 3, EndColumn: 9}}
	if got := locationsOf(t, out); !reflect.DeepEqual(got, want) {
		t.Fatalf("definition of area: %+v, want %+v", got, want)
	}
}
