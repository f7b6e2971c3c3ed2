package fs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/tool"
)

func TestReadWholeAndLines(t *testing.T) {
	e := newEnv(t)
	c := call("r", []string{"docs"}, nil)
	var r ReadReply
	e.ok(t, c, req("op", "read", "path", "docs/a.md"), &r)
	if r.Content != "# docs\nline 2\nline 3\n" || r.Size != 21 || r.Lines != 3 || r.NextOffset != nil || r.Truncated {
		t.Fatalf("whole read: %+v", r)
	}
	r = ReadReply{}
	e.ok(t, c, req("op", "read", "path", "docs/a.md", "offset", 1, "limit", 1), &r)
	if r.Content != "line 2\n" || r.Offset != 1 || r.Lines != 1 || r.NextOffset == nil || *r.NextOffset != 2 {
		t.Fatalf("line read: %+v", r)
	}
	r = ReadReply{}
	e.ok(t, c, req("op", "read", "path", "docs/a.md", "offset", 2), &r)
	if r.Content != "line 3\n" || r.NextOffset != nil {
		t.Fatalf("read to end: %+v", r)
	}
	r = ReadReply{}
	e.ok(t, c, req("op", "read", "path", "docs/a.md", "offset", 10), &r)
	if r.Content != "" || r.Lines != 0 || r.NextOffset != nil {
		t.Fatalf("read past end: %+v", r)
	}
	// A byte limit cuts after the last whole line and says where to go on.
	r = ReadReply{}
	e.ok(t, c, req("op", "read", "path", "docs/a.md", "maxBytes", 10), &r)
	if r.Content != "# docs\n" || !r.Truncated || r.NextOffset == nil || *r.NextOffset != 1 {
		t.Fatalf("capped read: %+v", r)
	}
	r = ReadReply{}
	e.ok(t, c, req("op", "read", "path", "docs/a.md", "offset", 0, "limit", 3, "maxBytes", 10), &r)
	if r.Content != "# docs\n" || !r.Truncated || *r.NextOffset != 1 {
		t.Fatalf("capped line read: %+v", r)
	}
	e.fail(t, c, req("op", "read", "path", "docs"), tool.KindInvalidArguments)
	e.fail(t, c, req("op", "read", "path", "docs/missing.md"), tool.KindNotFound)
	e.fail(t, c, req("op", "read", "path", "docs/a.md", "offset", -1), tool.KindInvalidArguments)
}

func TestReadBinaryAndLimit(t *testing.T) {
	e := newEnv(t)
	bin := []byte{0, 1, 2, 0xff, 0xfe, '\n', 3}
	if err := os.WriteFile(filepath.Join(e.proj, "out/bin"), bin, 0o644); err != nil {
		t.Fatal(err)
	}
	c := call("r", []string{"out"}, nil)
	var r ReadReply
	e.ok(t, c, req("op", "read", "path", "out/bin"), &r)
	if r.Encoding != "base64" || r.Content != "AAEC//4KAw==" {
		t.Fatalf("binary read: %+v", r)
	}
	// The configured limit is a ceiling a request cannot raise.
	if err := e.fs.SetConfig(Config{ProjectRoot: e.proj, Home: e.homeLink, Limits: Limits{MaxReadBytes: 4}}); err != nil {
		t.Fatal(err)
	}
	r = ReadReply{}
	e.ok(t, c, req("op", "read", "path", "out/keep.txt", "maxBytes", 1000), &r)
	if r.Content != "keep" || !r.Truncated {
		t.Fatalf("limited read: %+v", r)
	}
}

func TestReadFIFODoesNotBlock(t *testing.T) {
	e := newEnv(t)
	if err := syscall.Mkfifo(filepath.Join(e.proj, "out/fifo"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	c := call("r", []string{"out"}, []string{"out"})
	e.fail(t, c, req("op", "read", "path", "out/fifo"), tool.KindInvalidArguments)
	e.fail(t, c, req("op", "write", "path", "out/fifo", "content", "x"), tool.KindFailed)
}

func TestListOmitsDenied(t *testing.T) {
	e := newEnv(t)
	c := call("r", []string{"."}, nil)
	var l ListReply
	e.ok(t, c, req("op", "list", "path", "src"), &l)
	var names []string
	for _, en := range l.Entries {
		names = append(names, en.Name+":"+en.Type)
	}
	want := []string{"a.go:file", "abs:symlink", "b.go:file", "conf:dir", "dangling:symlink", "deep:dir",
		"docsdir:symlink", "escape:symlink", "homedir:symlink", "todocs:symlink", "toenv:symlink"}
	if !slices.Equal(names, want) {
		t.Fatalf("list src:\n got %v\nwant %v", names, want)
	}
	l = ListReply{}
	e.ok(t, c, req("op", "list", "path", "config"), &l)
	if len(l.Entries) != 1 || l.Entries[0].Name != "app.yaml" || l.Entries[0].Size != 10 {
		t.Fatalf("list config: %+v", l)
	}
	l = ListReply{}
	e.ok(t, c, req("op", "list", "path", "src", "limit", 2), &l)
	if len(l.Entries) != 2 || !l.Truncated {
		t.Fatalf("limited list: %+v", l)
	}
	l = ListReply{}
	e.ok(t, call("n", []string{"notes:"}, nil), req("op", "list", "path", "notes:"), &l)
	if len(l.Entries) != 1 || l.Entries[0].Name != "todo.md" || l.Path != "notes:." {
		t.Fatalf("list notes: %+v", l)
	}
}

func TestStat(t *testing.T) {
	e := newEnv(t)
	c := call("r", []string{"src", "docs"}, nil)
	var s StatReply
	e.ok(t, c, req("op", "stat", "path", "src/a.go"), &s)
	if s.Type != "file" || s.Size != 23 || s.Mode != "0644" || s.Symlink || s.ModTime == "" {
		t.Fatalf("stat: %+v", s)
	}
	s = StatReply{}
	e.ok(t, c, req("op", "stat", "path", "src/todocs"), &s)
	if s.Type != "file" || !s.Symlink {
		t.Fatalf("stat symlink: %+v", s)
	}
	e.fail(t, c, req("op", "stat", "path", "src/nope"), tool.KindNotFound)
}

func TestGlob(t *testing.T) {
	e := newEnv(t)
	var g GlobReply
	e.ok(t, call("r", []string{"."}, nil), req("op", "glob", "pattern", "**/*.go"), &g)
	if want := []string{"src/a.go", "src/b.go", "src/deep/c.go"}; !slices.Equal(g.Matches, want) {
		t.Fatalf("glob: %v", g.Matches)
	}
	// Everything the whole tree shows: no deny-listed name, no path through
	// a symlink, only symlinks whose target is readable.
	g = GlobReply{}
	e.ok(t, call("r", []string{".", "notes:"}, nil), req("op", "glob", "pattern", "**"), &g)
	for _, m := range g.Matches {
		l := strings.ToLower(m)
		if strings.Contains(l, ".env") || strings.Contains(l, "id_rsa") || strings.Contains(l, ".pem") ||
			strings.HasPrefix(m, "private") || strings.Contains(m, "escape") || strings.Contains(m, "toenv") ||
			strings.Contains(m, "homedir") || strings.Contains(m, "abs") || strings.Contains(m, "docsdir/") {
			t.Errorf("glob ** revealed %q", m)
		}
	}
	if !slices.Contains(g.Matches, "src/todocs") || !slices.Contains(g.Matches, "docs/a.md") {
		t.Errorf("glob ** lost readable entries: %v", g.Matches)
	}
	// Only granted subtrees are walked.
	g = GlobReply{}
	e.ok(t, call("r", []string{"docs"}, nil), req("op", "glob", "pattern", "**"), &g)
	if want := []string{"docs", "docs/a.md"}; !slices.Equal(g.Matches, want) {
		t.Fatalf("glob with docs grant: %v", g.Matches)
	}
	g = GlobReply{}
	e.ok(t, call("r", []string{"notes:"}, nil), req("op", "glob", "pattern", "notes:*.md"), &g)
	if want := []string{"notes:todo.md"}; !slices.Equal(g.Matches, want) {
		t.Fatalf("glob notes: %v", g.Matches)
	}
	g = GlobReply{}
	e.ok(t, call("r", []string{"src"}, nil), req("op", "glob", "pattern", "src/**", "limit", 2), &g)
	if len(g.Matches) != 2 || !g.Truncated {
		t.Fatalf("limited glob: %+v", g)
	}
	c := call("r", []string{"src"}, nil)
	e.fail(t, c, req("op", "glob", "pattern", "../**"), tool.KindInvalidArguments)
	e.fail(t, c, req("op", "glob", "pattern", "/etc/*"), tool.KindInvalidArguments)
	e.fail(t, c, req("op", "glob", "pattern", "src/[a"), tool.KindInvalidArguments)
	e.fail(t, c, req("op", "glob", "pattern", "docs/*"), tool.KindDenied)
}

func TestSearch(t *testing.T) {
	e := newEnv(t)
	all := call("r", []string{".", "notes:"}, nil)
	var s SearchReply
	e.ok(t, all, req("op", "search", "pattern", `func \w+\(`), &s)
	got := fmt.Sprint(s.Matches)
	if want := "[{src/a.go 3 1 func A() {}} {src/b.go 3 1 func B() { A() }}]"; got != want {
		t.Fatalf("search:\n got %s\nwant %s", got, want)
	}
	// The secret is in eight files the tool may not read: no match, not
	// even through symlinks.
	s = SearchReply{}
	out := e.ok(t, all, req("op", "search", "pattern", "SECRET"), &s)
	if len(s.Matches) != 0 {
		t.Fatalf("search revealed denied files: %s", out)
	}
	e.noLeak(t, "search", out)
	s = SearchReply{}
	e.ok(t, all, req("op", "search", "pattern", "A", "path", "src", "glob", "b.go", "ignoreCase", true), &s)
	if got := fmt.Sprint(s.Matches); got != "[{src/b.go 1 2 package a} {src/b.go 3 12 func B() { A() }}]" || s.FilesScanned != 1 {
		t.Fatalf("search with glob: %+v", s)
	}
	s = SearchReply{}
	e.ok(t, all, req("op", "search", "pattern", ".", "maxMatches", 2), &s)
	if len(s.Matches) != 2 || !s.Truncated {
		t.Fatalf("match limit: %+v", s)
	}
	s = SearchReply{}
	e.ok(t, all, req("op", "search", "pattern", "zzz", "maxFiles", 1), &s)
	if s.FilesScanned != 1 || !s.Truncated {
		t.Fatalf("file limit: %+v", s)
	}
	s = SearchReply{}
	e.ok(t, all, req("op", "search", "pattern", "zzz", "maxBytes", 15), &s)
	if s.BytesScanned != 15 || !s.Truncated {
		t.Fatalf("byte limit: %+v", s)
	}
	e.fail(t, all, req("op", "search", "pattern", "("), tool.KindInvalidArguments)
	e.fail(t, call("r", []string{"src"}, nil), req("op", "search", "pattern", "x", "path", "docs"), tool.KindDenied)
	// A search only covers what is granted, also from the root down.
	s = SearchReply{}
	e.ok(t, call("r", []string{"docs"}, nil), req("op", "search", "pattern", "package|line"), &s)
	if len(s.Matches) != 2 || s.Matches[0].Path != "docs/a.md" {
		t.Fatalf("search with docs grant: %+v", s)
	}
}

func TestSearchCancelled(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	big := strings.Repeat("line\n", 10000)
	if err := os.WriteFile(filepath.Join(e.proj, "out/big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := e.fs.Serve(ctx, call("r", []string{"out"}, nil), []byte(req("op", "search", "pattern", "zzz", "path", "out")))
	if tool.KindOf(err) != tool.KindCancelled {
		t.Fatalf("want cancelled, got %v", err)
	}
}

func TestWriteAppendMkdirRemove(t *testing.T) {
	e := newEnv(t)
	c := call("w", []string{"out"}, []string{"out"})
	var w WriteReply
	e.ok(t, c, req("op", "write", "path", "out/new.txt", "content", "one\n"), &w)
	if w.Bytes != 4 || w.Path != "out/new.txt" {
		t.Fatalf("write: %+v", w)
	}
	e.ok(t, c, req("op", "append", "path", "out/new.txt", "content", "dHdvCg==", "encoding", "base64"), nil)
	if b, _ := os.ReadFile(filepath.Join(e.proj, "out/new.txt")); string(b) != "one\ntwo\n" {
		t.Fatalf("after append: %q", b)
	}
	e.ok(t, c, req("op", "write", "path", "out/new.txt", "content", "three"), nil)
	if b, _ := os.ReadFile(filepath.Join(e.proj, "out/new.txt")); string(b) != "three" {
		t.Fatalf("after overwrite: %q", b)
	}
	e.fail(t, c, req("op", "write", "path", "out/sub/x.txt", "content", "x"), tool.KindNotFound)
	e.ok(t, c, req("op", "mkdir", "path", "out/sub/deeper"), nil)
	e.ok(t, c, req("op", "write", "path", "out/sub/deeper/x.txt", "content", "x"), nil)
	e.fail(t, c, req("op", "write", "path", "out/sub", "content", "x"), tool.KindInvalidArguments)
	e.fail(t, c, req("op", "mkdir", "path", "out/new.txt/d"), tool.KindFailed)
	e.fail(t, c, req("op", "write", "path", "out/x", "content", "%%%", "encoding", "base64"), tool.KindInvalidArguments)
	e.fail(t, c, req("op", "write", "path", "out/x", "content", "x", "encoding", "latin1"), tool.KindInvalidArguments)
	e.fail(t, c, req("op", "remove", "path", "out/sub"), tool.KindFailed)
	e.ok(t, c, req("op", "remove", "path", "out/sub", "recursive", true), nil)
	if _, err := os.Stat(filepath.Join(e.proj, "out/sub")); !os.IsNotExist(err) {
		t.Fatalf("out/sub still there: %v", err)
	}
	// Removing a symlink removes the link, never its target.
	e.ok(t, c, req("op", "remove", "path", "out/linkedsrc"), nil)
	if _, err := os.Stat(filepath.Join(e.proj, "src/a.go")); err != nil {
		t.Fatal("remove followed the symlink:", err)
	}
	e.fail(t, c, req("op", "remove", "path", "out/nope"), tool.KindNotFound)
	e.fail(t, call("w", nil, []string{"."}), req("op", "remove", "path", "."), tool.KindInvalidArguments)
	// Writing needs no read grant, and grants nothing to read.
	wo := call("w", nil, []string{"out"})
	e.ok(t, wo, req("op", "write", "path", "out/w.txt", "content", "w"), nil)
	e.fail(t, wo, req("op", "read", "path", "out/w.txt"), tool.KindDenied)
	// Size limit.
	if err := e.fs.SetConfig(Config{ProjectRoot: e.proj, Home: e.homeLink, Limits: Limits{MaxWriteBytes: 3}}); err != nil {
		t.Fatal(err)
	}
	e.fail(t, c, req("op", "write", "path", "out/big", "content", "four"), tool.KindInvalidArguments)
}

func TestRequestErrors(t *testing.T) {
	e := newEnv(t)
	c := call("r", []string{"."}, nil)
	e.fail(t, c, `{"op":"chmod","path":"src/a.go"}`, tool.KindInvalidArguments)
	e.fail(t, c, `{"op":"read","path":"src/a.go","follow":true}`, tool.KindInvalidArguments)
	e.fail(t, c, `{"op":"read"`, tool.KindInvalidArguments)
	e.fail(t, c, `{"op":"read","path":"src/a.go"} {}`, tool.KindInvalidArguments)
	e.fail(t, c, `{"op":"read","path":"nosuchroot:a"}`, tool.KindInvalidArguments)
	// "./" reaches a project file whose name looks like a root prefix.
	if err := os.WriteFile(filepath.Join(e.proj, "nosuchroot:a"), []byte("colon"), 0o644); err != nil {
		t.Fatal(err)
	}
	var r ReadReply
	e.ok(t, c, `{"op":"read","path":"./nosuchroot:a"}`, &r)
	if r.Content != "colon" || r.Path != "nosuchroot:a" {
		t.Fatalf("read ./nosuchroot:a: %+v", r)
	}
}

// TestDenialWording checks that a denial reads the same whether or not the
// path exists, and that a symlink's real-path denial is worded like a
// lexical one, so that neither reveals anything.
func TestDenialWording(t *testing.T) {
	e := newEnv(t)
	all := call("all", []string{"."}, []string{"."})
	src := call("src", []string{"src"}, nil)
	same := func(a, pa, b, pb string) {
		t.Helper()
		if strings.ReplaceAll(a, pa, "P") != strings.ReplaceAll(b, pb, "P") {
			t.Errorf("wording differs:\n%s\n%s", a, b)
		}
	}
	m1 := e.fail(t, all, req("op", "read", "path", "config/.env"), tool.KindDenied)
	m2 := e.fail(t, all, req("op", "read", "path", "config/nope/.env"), tool.KindDenied)
	same(m1, "config/.env", m2, "config/nope/.env")
	want := `read "config/.env": matches deny rule ".env" (built-in); deny rules always win over grants and also apply to the real path behind symlinks`
	if m1 != want {
		t.Errorf("deny message:\n got %s\nwant %s", m1, want)
	}
	m3 := e.fail(t, all, req("op", "read", "path", "src/toenv"), tool.KindDenied)
	m4 := e.fail(t, all, req("op", "read", "path", "src/.env"), tool.KindDenied)
	same(m3, "src/toenv", m4, "src/.env")
	m5 := e.fail(t, src, req("op", "read", "path", "docs/a.md"), tool.KindDenied)
	m6 := e.fail(t, src, req("op", "read", "path", "docs/none.md"), tool.KindDenied)
	same(m5, "docs/a.md", m6, "docs/none.md")
	if want := `read "docs/a.md": not granted; grant it with tools.grants.src.fs.read: ["docs"]`; m5 != want {
		t.Errorf("grant message:\n got %s\nwant %s", m5, want)
	}
	m7 := e.fail(t, src, req("op", "write", "path", "src/a.go", "content", "x"), tool.KindDenied)
	if want := `write "src/a.go": not granted; grant it with tools.grants.src.fs.write: ["src"]`; m7 != want {
		t.Errorf("write grant message:\n got %s\nwant %s", m7, want)
	}
	m8 := e.fail(t, all, req("op", "read", "path", "private/p.txt"), tool.KindDenied)
	if !strings.Contains(m8, `deny rule "private/**" (security.deny)`) {
		t.Errorf("user rule message: %s", m8)
	}
	// Real-path denials of an existing and a missing file behind a symlink.
	m9 := e.fail(t, all, req("op", "read", "path", "src/homedir/.ssh"), tool.KindDenied)
	m10 := e.fail(t, all, req("op", "read", "path", "src/homedir/.sshx"), tool.KindDenied)
	same(m9, "src/homedir/.ssh", m10, "src/homedir/.sshx")
	m11 := e.fail(t, all, req("op", "read", "path", "src/docsdir/.env.x"), tool.KindDenied)
	m12 := e.fail(t, all, req("op", "read", "path", "src/.env.x"), tool.KindDenied)
	same(m11, "src/docsdir/.env.x", m12, "src/.env.x")
}

// TestHomeAsProjectRoot runs warden in the home directory, reached through
// its real path while HOME names a symlink: the ~ rules still hold.
func TestHomeAsProjectRoot(t *testing.T) {
	e := newEnv(t)
	for _, root := range []string{e.home, e.homeLink} {
		c, err := New(Config{ProjectRoot: root, Home: e.homeLink, Deny: []string{"proj/private"}})
		if err != nil {
			t.Fatal(err)
		}
		e.fs = c
		all := call("all", []string{"."}, []string{"."})
		for _, p := range []string{".ssh/id_ed25519", ".SSH/id_ed25519", ".aws/credentials", ".bash_history",
			".config/gh/hosts.yml", ".netrc", "proj/src/homedir/.netrc", "proj/config/.env"} {
			e.fail(t, all, req("op", "read", "path", p), tool.KindDenied)
		}
		e.fail(t, all, req("op", "write", "path", ".ssh/authorized_keys", "content", "x"), tool.KindDenied)
		var l ListReply
		e.ok(t, all, req("op", "list", "path", "."), &l)
		for _, en := range l.Entries {
			if en.Name == ".ssh" || en.Name == ".aws" || en.Name == ".netrc" || en.Name == ".bash_history" {
				t.Errorf("list ~ shows %s", en.Name)
			}
		}
		var r ReadReply
		e.ok(t, all, req("op", "read", "path", "public.txt"), &r)
		if r.Content != "public\n" {
			t.Fatalf("public.txt: %+v", r)
		}
		var s SearchReply
		out := e.ok(t, all, req("op", "search", "pattern", "SECRET"), &s)
		if len(s.Matches) != 0 {
			t.Fatalf("search in ~ found secrets: %s", out)
		}
	}
}

func TestProcRoot(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	e := newEnv(t)
	c, err := New(Config{ProjectRoot: e.proj, Roots: map[string]string{"proc": "/proc"}, Home: e.homeLink})
	if err != nil {
		t.Fatal(err)
	}
	e.fs = c
	p := call("p", []string{"proc:"}, nil)
	for _, path := range []string{"proc:self/environ", "proc:self/mem", "proc:thread-self/environ",
		fmt.Sprintf("proc:%d/environ", os.Getpid()), "proc:self/task/1/mem", "/proc/self/environ", "proc:SELF/ENVIRON"} {
		e.fail(t, p, req("op", "read", "path", path), tool.KindDenied)
	}
	var s SearchReply
	e.ok(t, p, req("op", "search", "pattern", "PATH=", "path", "proc:self", "maxFiles", 200), &s)
	for _, m := range s.Matches {
		if strings.Contains(m.Path, "environ") {
			t.Fatalf("search found %v", m)
		}
	}
}

func TestSetConfigSwap(t *testing.T) {
	e := newEnv(t)
	c := call("r", []string{"notes:"}, nil)
	e.ok(t, c, req("op", "read", "path", "notes:todo.md"), nil)
	// A new deny rule applies from the next call on, without a restart.
	if err := e.fs.SetConfig(Config{ProjectRoot: e.proj, Roots: map[string]string{"notes": e.notes},
		Deny: []string{"todo.*"}, Home: e.homeLink}); err != nil {
		t.Fatal(err)
	}
	e.fail(t, c, req("op", "read", "path", "notes:todo.md"), tool.KindDenied)
	// A bad config is refused and the previous one stays.
	if err := e.fs.SetConfig(Config{ProjectRoot: e.proj, Deny: []string{"[bad"}, Home: e.homeLink}); err == nil {
		t.Fatal("bad deny pattern accepted")
	}
	if err := e.fs.SetConfig(Config{ProjectRoot: e.proj, Roots: map[string]string{"project": e.notes}, Home: e.homeLink}); err == nil {
		t.Fatal("root named project accepted")
	}
	if err := e.fs.SetConfig(Config{ProjectRoot: filepath.Join(e.proj, "missing"), Home: e.homeLink}); err == nil {
		t.Fatal("missing root accepted")
	}
	e.fail(t, c, req("op", "read", "path", "notes:todo.md"), tool.KindDenied)
	// Dropping the root makes its paths unknown.
	if err := e.fs.SetConfig(Config{ProjectRoot: e.proj, Home: e.homeLink}); err != nil {
		t.Fatal(err)
	}
	e.fail(t, c, req("op", "read", "path", "notes:todo.md"), tool.KindInvalidArguments)
}

func TestCheckReadAndLocate(t *testing.T) {
	e := newEnv(t)
	c := call("lsp", []string{"src", "notes:"}, nil)
	abs, err := e.fs.ResolveRead(c, "src/a.go")
	if err != nil || abs != filepath.Join(e.proj, "src/a.go") {
		t.Fatalf("ResolveRead src/a.go = %q, %v", abs, err)
	}
	if err := e.fs.CheckRead(c, "src/a.go"); err != nil {
		t.Fatal(err)
	}
	if err := e.fs.CheckRead(c, "docs/a.md"); tool.KindOf(err) != tool.KindDenied {
		t.Fatalf("CheckRead docs/a.md: %v", err)
	}
	if err := e.fs.CheckRead(c, "src/toenv"); tool.KindOf(err) != tool.KindDenied {
		t.Fatalf("CheckRead src/toenv: %v", err)
	}
	for abs, want := range map[string]string{
		filepath.Join(e.proj, "src/b.go"):          "src/b.go",
		filepath.Join(e.homeLink, "proj/src/b.go"): "src/b.go",
		filepath.Join(e.notes, "todo.md"):          "notes:todo.md",
		e.proj:                                     ".",
	} {
		got, ok := e.fs.Locate(abs)
		if !ok || got != want {
			t.Errorf("Locate(%s) = %q, %v; want %q", abs, got, ok, want)
		}
	}
	if p, ok := e.fs.Locate(filepath.Join(e.home, ".ssh/id_ed25519")); ok {
		t.Errorf("Locate outside roots = %q", p)
	}
	// A located path goes back through the gate: an absolute path works too.
	if err := e.fs.CheckRead(c, filepath.Join(e.notes, "todo.md")); err != nil {
		t.Fatal(err)
	}
	if got := e.fs.ProjectRoot(); got != e.proj {
		t.Errorf("ProjectRoot = %q", got)
	}
}

// TestVerifyOpened stands in for a race: the gate judged src/a.go, but what
// got opened is config/.env (as if src/a.go had been swapped for a symlink
// in between). The check on the opened file must refuse it.
func TestVerifyOpened(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd")
	}
	e := newEnv(t)
	c := call("r", []string{"."}, nil)
	o := &opCall{ctx: context.Background(), call: c, st: e.fs.state.Load(), req: &request{}}
	tg, err := o.st.guard.Check("read", 0, "r", []string{"."}, "src/a.go")
	if err != nil {
		t.Fatal(err)
	}
	for name, kind := range map[string]tool.Kind{"config/.env": tool.KindDenied, "src/a.go": ""} {
		f, err := os.Open(filepath.Join(e.proj, name))
		if err != nil {
			t.Fatal(err)
		}
		err = o.verifyOpened("read", 0, tg, f)
		f.Close()
		if tool.KindOf(err) != kind {
			t.Errorf("opened %s: %v, want kind %q", name, err, kind)
		}
	}
	// Opened outside the root altogether.
	f, err := os.Open(filepath.Join(e.home, "public.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := o.verifyOpened("read", 0, tg, f); tool.KindOf(err) != tool.KindDenied {
		t.Errorf("opened outside the root: %v", err)
	}
}

// The LSP capability takes *FS as its read gate.
var _ interface {
	CheckRead(*hostfuncs.Call, string) error
} = (*FS)(nil)
