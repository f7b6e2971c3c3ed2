package fs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/tool"
)

func req(fields ...any) string {
	m := map[string]any{}
	for i := 0; i < len(fields); i += 2 {
		m[fields[i].(string)] = fields[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// TestEscapeCorpus tries every way out we know of. Each case must fail with
// exactly the expected kind, and no reply may carry secret content or a
// host path.
func TestEscapeCorpus(t *testing.T) {
	e := newEnv(t)
	src := call("reader", []string{"src"}, []string{"out"})
	all := call("all", []string{".", "notes:"}, []string{".", "notes:"})
	none := call("none", nil, nil)
	long := strings.Repeat("a/", 2100) + "x"
	cases := []struct {
		name string
		who  string
		req  string
		kind tool.Kind
	}{
		{"dotdot chain", "src", req("op", "read", "path", "src/../../.ssh/id_ed25519"), tool.KindDenied},
		{"deep dotdot", "all", req("op", "read", "path", "../../../../../../../../etc/passwd"), tool.KindDenied},
		{"dotdot after file", "all", req("op", "read", "path", "src/a.go/../../../x"), tool.KindDenied},
		{"named root dotdot", "all", req("op", "read", "path", "project:../.netrc"), tool.KindDenied},
		{"extra root slash dotdot", "all", req("op", "read", "path", "notes:/../../home/.netrc"), tool.KindDenied},
		{"absolute outside", "all", req("op", "read", "path", "/etc/passwd"), tool.KindDenied},
		{"absolute secret real path", "all", req("op", "read", "path", filepath.Join(e.home, ".ssh/id_ed25519")), tool.KindDenied},
		{"absolute secret via symlinked home", "all", req("op", "read", "path", filepath.Join(e.homeLink, ".aws/credentials")), tool.KindDenied},
		{"absolute secret case variant", "all", req("op", "read", "path", filepath.Join(e.home, ".SSH/ID_ED25519")), tool.KindDenied},
		{"proc self environ", "all", req("op", "read", "path", "/proc/self/environ"), tool.KindDenied},
		{"proc pid mem", "all", req("op", "read", "path", "/proc/1/mem"), tool.KindDenied},
		{"proc task environ", "all", req("op", "read", "path", "/proc/self/task/1/environ"), tool.KindDenied},
		{"symlink out of root", "src", req("op", "read", "path", "src/escape"), tool.KindDenied},
		{"absolute symlink", "src", req("op", "read", "path", "src/abs"), tool.KindDenied},
		{"symlink to deny-listed file", "all", req("op", "read", "path", "src/toenv"), tool.KindDenied},
		{"symlink to ungranted file", "src", req("op", "read", "path", "src/todocs"), tool.KindDenied},
		{"through symlinked dir", "src", req("op", "read", "path", "src/docsdir/a.md"), tool.KindDenied},
		{"absolute symlink inside the root", "all", req("op", "read", "path", "docs/rooted/a.go"), tool.KindDenied},
		{"through symlink to home", "all", req("op", "read", "path", "src/homedir/.ssh/id_ed25519"), tool.KindDenied},
		{"dotenv", "all", req("op", "read", "path", "config/.env"), tool.KindDenied},
		{"dotenv upper case", "all", req("op", "read", "path", "src/.ENV"), tool.KindDenied},
		{"dotenv variant", "all", req("op", "read", "path", "src/conf/.env.local"), tool.KindDenied},
		{"id_rsa upper case", "all", req("op", "read", "path", "src/ID_RSA"), tool.KindDenied},
		{"pem mixed case", "all", req("op", "read", "path", "src/server.Pem"), tool.KindDenied},
		{"extra root dotenv", "all", req("op", "read", "path", "notes:.env"), tool.KindDenied},
		{"user deny rule", "all", req("op", "read", "path", "private/p.txt"), tool.KindDenied},
		{"stat secret", "all", req("op", "stat", "path", "config/.env"), tool.KindDenied},
		{"list denied dir", "all", req("op", "list", "path", "private"), tool.KindDenied},
		{"search denied file", "all", req("op", "search", "pattern", "SECRET", "path", "config/.env"), tool.KindDenied},
		{"glob under denied dir", "all", req("op", "glob", "pattern", "private/**"), tool.KindDenied},
		{"NUL byte", "all", req("op", "read", "path", "src/a.go\x00.txt"), tool.KindInvalidArguments},
		{"very long path", "all", req("op", "read", "path", long), tool.KindInvalidArguments},
		{"very long component", "all", req("op", "read", "path", "src/"+strings.Repeat("x", 300)), tool.KindInvalidArguments},
		{"grant src reading docs", "src", req("op", "read", "path", "docs/a.md"), tool.KindDenied},
		{"grant src listing root", "src", req("op", "list", "path", "."), tool.KindDenied},
		{"write without write grant", "src", req("op", "write", "path", "src/a.go", "content", "x"), tool.KindDenied},
		{"write into denied path", "src", req("op", "write", "path", "out/.env", "content", "x"), tool.KindDenied},
		{"append into denied path", "all", req("op", "append", "path", "out/id_rsa", "content", "x"), tool.KindDenied},
		{"write through dangling symlink", "all-src-write", req("op", "write", "path", "src/dangling", "content", "x"), tool.KindDenied},
		{"write through symlinked dir", "src", req("op", "write", "path", "out/linkedsrc/a.go", "content", "x"), tool.KindDenied},
		{"mkdir through symlinked dir", "src", req("op", "mkdir", "path", "out/linkedsrc/new"), tool.KindDenied},
		{"remove deny-listed", "all", req("op", "remove", "path", "config/.env"), tool.KindDenied},
		{"remove tree holding secret", "all", req("op", "remove", "path", "config", "recursive", true), tool.KindDenied},
	}
	for _, op := range []string{
		req("op", "read", "path", "src/a.go"),
		req("op", "list", "path", "src"),
		req("op", "stat", "path", "src/a.go"),
		req("op", "glob", "pattern", "**"),
		req("op", "search", "pattern", "package"),
		req("op", "write", "path", "out/n.txt", "content", "x"),
		req("op", "append", "path", "out/n.txt", "content", "x"),
		req("op", "mkdir", "path", "out/d"),
		req("op", "remove", "path", "out/keep.txt"),
	} {
		cases = append(cases, struct {
			name string
			who  string
			req  string
			kind tool.Kind
		}{"no grant " + op, "none", op, tool.KindDenied})
	}
	calls := map[string]*hostfuncs.Call{
		"src": src, "all": all, "none": none,
		"all-src-write": call("w", []string{"."}, []string{"src"}),
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := calls[tc.who]
			msg := e.fail(t, c, tc.req, tc.kind)
			if tc.kind == tool.KindDenied && !strings.Contains(msg, "tools.grants.") && !strings.Contains(msg, "deny rule") &&
				!strings.Contains(msg, "outside") && !strings.Contains(msg, "symlink") {
				t.Errorf("denial does not say why: %s", msg)
			}
		})
	}
	// Nothing was written or removed by any of the attempts.
	for _, p := range []string{"docs/new.md", "out/.env", "out/id_rsa", "out/n.txt", "out/d", "src/new"} {
		if _, err := os.Lstat(filepath.Join(e.proj, p)); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	for _, p := range []string{"config/.env", "out/keep.txt"} {
		if _, err := os.Stat(filepath.Join(e.proj, p)); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.proj, "src/a.go")); string(b) != "package a\n\nfunc A() {}\n" {
		t.Errorf("src/a.go was changed: %q", b)
	}
	// The capability still works after all that.
	var r ReadReply
	e.ok(t, src, req("op", "read", "path", "src/a.go"), &r)
	if r.Content != "package a\n\nfunc A() {}\n" {
		t.Errorf("read after corpus: %q", r.Content)
	}
}
