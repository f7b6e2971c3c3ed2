package lsp

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"go.lsp.dev/protocol"

	"github.com/warden-run/warden/tool"
)

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		req  string
		want string // error substring, "" for success
	}{
		{`{"op":"documentSymbol","path":"a/b.go"}`, ""},
		{`{"op":"documentSymbol","path":"./a//b.go"}`, ""},
		{`{"op":"definition","path":"a.go","line":1,"column":1}`, ""},
		{`{"op":"references","path":"a.go","line":3,"column":4,"includeDeclaration":true}`, ""},
		{`{"op":"hover","path":"a.go","line":3,"column":4,"language":"go"}`, ""},
		{`{"op":"workspaceSymbol","query":""}`, ""},
		{`{"op":"diagnostics"}`, ""},
		{`{"op":"diagnostics","path":"a.go"}`, ""},
		{`{"op":"languages"}`, ""},
		{`{"op":"languages","path":"a.go"}`, "languages takes no language, path or offset"},
		{`{"op":"languages","language":"go"}`, "languages takes no language, path or offset"},
		{`{"op":"languages","offset":1}`, "languages takes no language, path or offset"},
		{`{"op":"languages","query":"x"}`, "languages takes no query"},
		{`{"op":"languages","line":1,"column":1}`, "languages takes no line or column"},
		{` {"op":"diagnostics"} `, ""},
		{``, "lsp request: EOF"},
		{`[]`, "lsp request: json: cannot unmarshal array"},
		{`{"op":"diagnostics"} {}`, "trailing data"},
		{`{"op":"diagnostics","extra":1}`, `unknown field "extra"`},
		{`{}`, "op is required"},
		{`{"op":"rename"}`, `unknown op "rename"`},
		{`{"op":"documentSymbol"}`, "documentSymbol needs a path"},
		{`{"op":"definition","path":"a.go"}`, "definition needs line and column, both 1-based"},
		{`{"op":"hover","path":"a.go","line":0,"column":1}`, "needs line and column"},
		{`{"op":"hover","path":"a.go","line":1.5,"column":1}`, "cannot unmarshal number 1.5"},
		{`{"op":"documentSymbol","path":"a.go","line":1}`, "documentSymbol takes no line or column"},
		{`{"op":"workspaceSymbol"}`, "workspaceSymbol needs a query"},
		{`{"op":"workspaceSymbol","query":"x","path":"a.go"}`, "workspaceSymbol takes no path"},
		{`{"op":"hover","path":"a.go","line":1,"column":1,"query":"x"}`, "hover takes no query"},
		{`{"op":"definition","path":"a.go","line":1,"column":1,"includeDeclaration":true}`, "definition takes no includeDeclaration"},
		{`{"op":"documentSymbol","path":"../a.go"}`, "stay inside"},
		{`{"op":"documentSymbol","path":"a/../../a.go"}`, "stay inside"},
		{`{"op":"documentSymbol","path":"/a.go"}`, "stay inside"},
		{`{"op":"documentSymbol","path":"."}`, "stay inside"},
		{`{"op":"documentSymbol","path":"a\\b.go"}`, "slash-separated"},
		{`{"op":"documentSymbol","path":"notes:a.go"}`, "only paths in the project root"},
	} {
		req, err := parseRequest([]byte(tc.req))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.req, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: parsed as %+v, want an error", tc.req, req)
			continue
		}
		if tool.KindOf(err) != tool.KindInvalidArguments || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want invalid_arguments with %q", tc.req, err, tc.want)
		}
	}
	for raw, want := range map[string]string{"./a//b/../c.go": "a/c.go", "project:src/a.go": "src/a.go"} {
		req, err := parseRequest([]byte(`{"op":"documentSymbol","path":"` + raw + `"}`))
		if err != nil || req.Path != want {
			t.Fatalf("path %q: got %+v, %v; want %q", raw, req, err, want)
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"op":"documentSymbol","path":"a/b.go"}`,
		`{"op":"definition","path":"a.go","line":1,"column":1}`,
		`{"op":"references","path":"a.go","line":3,"column":4,"includeDeclaration":true}`,
		`{"op":"workspaceSymbol","language":"go","query":"Foo"}`,
		`{"op":"diagnostics","path":"x/../y.go"}`,
		`{"op":"languages"}`,
		`{"op":"hover","path":"../../etc/passwd","line":1,"column":1}`,
		`{"op":"hover","path":"a:b","line":-1,"column":99999999999}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := parseRequest(raw)
		if err != nil {
			if tool.KindOf(err) != tool.KindInvalidArguments {
				t.Fatalf("error of kind %s: %v", tool.KindOf(err), err)
			}
			return
		}
		switch req.Op {
		case opDocumentSymbol, opWorkspaceSymbol, opDefinition, opReferences, opHover, opDiagnostics:
		case opLanguages:
			if req.Path != "" || req.Language != "" || req.Offset != 0 || req.Query != nil || req.Line != 0 || req.Column != 0 {
				t.Fatalf("accepted %+v", req)
			}
		default:
			t.Fatalf("accepted op %q", req.Op)
		}
		if req.Path != "" {
			if !filepath.IsLocal(req.Path) || strings.Contains(req.Path, `\`) || strings.Contains(req.Path, ":") {
				t.Fatalf("accepted path %q", req.Path)
			}
			again, err := cleanPath(req.Path)
			if err != nil || again != req.Path {
				t.Fatalf("clean path %q is not canonical: %q, %v", req.Path, again, err)
			}
		}
		switch req.Op {
		case opDefinition, opReferences, opHover:
			if req.Path == "" || req.Line < 1 || req.Column < 1 {
				t.Fatalf("accepted %+v", req)
			}
		}
	})
}

func TestPositions(t *testing.T) {
	line := []byte("a😀ü := 1")
	lines := [][]byte{line}
	for _, tc := range []struct {
		col   int // 1-based byte column
		utf16 uint32
		utf32 uint32
	}{
		{1, 0, 0},  // a
		{2, 1, 1},  // 😀 (4 bytes, a surrogate pair)
		{6, 3, 2},  // ü
		{7, 3, 2},  // inside ü: its start
		{8, 4, 3},  // space
		{13, 9, 8}, // end of line
	} {
		p := Position{Line: 1, Column: tc.col}
		if got := toServer(lines, p, protocol.PositionEncodingKindUTF16); got.Character != tc.utf16 {
			t.Errorf("column %d to UTF-16: %d, want %d", tc.col, got.Character, tc.utf16)
		}
		if got := toServer(lines, p, protocol.PositionEncodingKindUTF32); got.Character != tc.utf32 {
			t.Errorf("column %d to UTF-32: %d, want %d", tc.col, got.Character, tc.utf32)
		}
		if got := toServer(lines, p, protocol.PositionEncodingKindUTF8); got.Character != uint32(runeStart(line, tc.col-1)) {
			t.Errorf("column %d to UTF-8: %d", tc.col, got.Character)
		}
	}
	// From the server: a column inside a surrogate pair lands on its rune;
	// a column past the end is clamped; without the line it passes through.
	for _, tc := range []struct {
		char uint32
		line []byte
		enc  protocol.PositionEncodingKind
		want int
	}{
		{3, line, protocol.PositionEncodingKindUTF16, 6},
		{2, line, protocol.PositionEncodingKindUTF16, 2},
		{99, line, protocol.PositionEncodingKindUTF16, 13},
		{2, line, protocol.PositionEncodingKindUTF32, 6},
		{5, line, protocol.PositionEncodingKindUTF8, 6},
		{3, nil, protocol.PositionEncodingKindUTF16, 4},
	} {
		got := fromServer(protocol.Position{Line: 4, Character: tc.char}, tc.line, tc.enc)
		if got != (Position{Line: 5, Column: tc.want}) {
			t.Errorf("%s %d: got %+v, want column %d", tc.enc, tc.char, got, tc.want)
		}
	}
	if got := splitLines([]byte("a\r\nb\n")); len(got) != 3 || string(got[0]) != "a" || string(got[1]) != "b" || len(got[2]) != 0 {
		t.Errorf("splitLines: %q", got)
	}
}

func FuzzPositions(f *testing.F) {
	f.Add("a😀ü := 1", 6, uint32(3))
	f.Add("\xff\xfe plain", 2, uint32(1))
	f.Add("", 1, uint32(0))
	f.Fuzz(func(t *testing.T, text string, col int, char uint32) {
		line := []byte(text)
		if col < 1 || col > len(line)+1 {
			return
		}
		lines := [][]byte{line}
		start := runeStart(line, col-1)
		for _, enc := range []protocol.PositionEncodingKind{protocol.PositionEncodingKindUTF8, protocol.PositionEncodingKindUTF16, protocol.PositionEncodingKindUTF32} {
			sp := toServer(lines, Position{Line: 1, Column: col}, enc)
			back := fromServer(sp, line, enc)
			// Invalid UTF-8 decodes one byte at a time, so a round trip
			// lands on the rune start either way.
			if back.Line != 1 || back.Column != start+1 {
				t.Fatalf("%s: column %d -> %d -> %d, want %d", enc, col, sp.Character, back.Column, start+1)
			}
			got := fromServer(protocol.Position{Character: char}, line, enc)
			if got.Column < 1 || got.Column > len(line)+1 {
				t.Fatalf("%s: server column %d gives column %d outside the line", enc, char, got.Column)
			}
			if off := got.Column - 1; off < len(line) && !utf8.RuneStart(line[off]) && utf8.ValidString(text) {
				t.Fatalf("%s: server column %d splits a rune at %d", enc, char, off)
			}
		}
	})
}
