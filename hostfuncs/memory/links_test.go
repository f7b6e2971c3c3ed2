package memory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/tool"
)

const secretValue = "TOKEN=s3cret-do-not-leak"

// linkProject is a project with a .env holding a secret and nothing else.
func linkProject(t *testing.T) (project string) {
	t.Helper()
	project = filepath.Join(t.TempDir(), "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".env"), []byte(secretValue+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return project
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// wantRefused checks a refusal: kind denied, the topic and the offending
// store path named, and nothing of the secret or any host path.
func wantRefused(t *testing.T, err error, project, topic, at, why string) {
	t.Helper()
	wantKind(t, err, tool.KindDenied)
	msg := err.Error()
	for _, want := range []string{topic, at, why} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not mention %q", msg, want)
		}
	}
	for _, leak := range []string{"s3cret", project, ".env"} {
		if strings.Contains(msg, leak) {
			t.Errorf("message %q reveals %q", msg, leak)
		}
	}
}

var readOnly = callWith(tool.Capabilities{Memory: tool.MemoryRead})

// TestIssueAttack is the attack of issue 11 exactly: with
// .warden/memories -> .. and leak.md -> .env in the project, a tool with
// only memory: read read .env as topic "leak".
func TestIssueAttack(t *testing.T) {
	project := linkProject(t)
	mustSymlink(t, "..", filepath.Join(project, ".warden", "memories"))
	mustSymlink(t, ".env", filepath.Join(project, "leak.md"))
	m, err := New(Config{ProjectRoot: project}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = serve(t, m, readOnly, req{"op": "get", "topic": "leak"})
	wantRefused(t, err, project, `"leak"`, ".warden/memories", "symbolic link")
	_, err = serve(t, m, readOnly, req{"op": "list"})
	wantRefused(t, err, project, "list", ".warden/memories", "symbolic link")
	for _, op := range []string{"set", "append", "delete"} {
		r := req{"op": op, "topic": "leak"}
		if op != "delete" {
			r["value"] = "x"
		}
		_, err = serve(t, m, rw, r)
		wantRefused(t, err, project, `"leak"`, ".warden/memories", "symbolic link")
	}
	if data, _ := os.ReadFile(filepath.Join(project, ".env")); string(data) != secretValue+"\n" {
		t.Fatalf(".env changed: %q", data)
	}

	// Only the topic link: the memories directory is real.
	project = linkProject(t)
	mustSymlink(t, "../../.env", filepath.Join(project, ".warden", "memories", "leak.md"))
	m, _ = New(Config{ProjectRoot: project}, nil)
	_, err = serve(t, m, readOnly, req{"op": "get", "topic": "leak"})
	wantRefused(t, err, project, `"leak"`, ".warden/memories/leak.md", "symbolic link")
}

// TestSymlinkedWardenDir: .warden itself a link (to a directory holding a
// "memories" of the attacker's choosing).
func TestSymlinkedWardenDir(t *testing.T) {
	project := linkProject(t)
	elsewhere := filepath.Join(project, "elsewhere")
	os.MkdirAll(filepath.Join(elsewhere, "memories"), 0o755)
	mustSymlink(t, "../.env", filepath.Join(elsewhere, "memories", "leak.md"))
	mustSymlink(t, "elsewhere", filepath.Join(project, ".warden"))
	m, _ := New(Config{ProjectRoot: project}, nil)
	_, err := serve(t, m, readOnly, req{"op": "get", "topic": "leak"})
	wantRefused(t, err, project, `"leak"`, ".warden is a symbolic link", "never follows")
	_, err = serve(t, m, rw, req{"op": "set", "topic": "x", "value": "v"})
	wantRefused(t, err, project, `"x"`, ".warden is a symbolic link", "never follows")
	if _, err := os.Stat(filepath.Join(elsewhere, "memories", "x.md")); err == nil {
		t.Fatal("set wrote through the symlinked .warden")
	}
}

// TestSymlinkedTopic: a topic file and a topic directory that are links,
// inside a real store, for every operation.
func TestSymlinkedTopic(t *testing.T) {
	project := linkProject(t)
	mem := filepath.Join(project, ".warden", "memories")
	mustSymlink(t, "../../.env", filepath.Join(mem, "leak.md"))
	// A link to a directory inside the store: harmless in itself, but the
	// store never follows one, so that no chain of links can be built.
	os.MkdirAll(filepath.Join(mem, "real"), 0o755)
	os.WriteFile(filepath.Join(mem, "real", "note.md"), []byte("n"), 0o644)
	mustSymlink(t, "real", filepath.Join(mem, "alias"))
	mustSymlink(t, "../..", filepath.Join(mem, "up"))
	os.WriteFile(filepath.Join(mem, "ok.md"), []byte("fine"), 0o644)
	m, _ := New(Config{ProjectRoot: project}, nil)

	cases := []struct{ topic, at string }{
		{"leak", ".warden/memories/leak.md"},
		{"alias/note", ".warden/memories/alias"},
		{"up/.env", ""}, // invalid topic: refused before the store is touched
		{"up/x", ".warden/memories/up"},
	}
	for _, c := range cases {
		for _, op := range []string{"get", "set", "append", "delete"} {
			r := req{"op": op, "topic": c.topic}
			if op == "set" || op == "append" {
				r["value"] = "overwrite"
			}
			_, err := serve(t, m, rw, r)
			if c.at == "" {
				wantKind(t, err, tool.KindInvalidArguments)
				continue
			}
			wantRefused(t, err, project, `"`+c.topic+`"`, c.at, "symbolic link")
		}
	}
	if data, _ := os.ReadFile(filepath.Join(project, ".env")); string(data) != secretValue+"\n" {
		t.Fatalf(".env changed: %q", data)
	}
	if fi, err := os.Lstat(filepath.Join(mem, "leak.md")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced or removed: %v %v", fi, err)
	}

	// The listing neither follows nor reveals them, and says it skipped them.
	r := mustServe(t, m, readOnly, req{"op": "list"})
	topics := listTopics(t, m, readOnly, "")
	if len(topics) != 2 || topics[0] != "ok" || topics[1] != "real/note" {
		t.Fatalf("list = %q", topics)
	}
	skipped, _ := r["skipped"].(map[string]any)
	if skipped["symlinks"] != 3.0 {
		t.Fatalf("list reply %v: want 3 skipped symlinks", r)
	}
	if raw := strings.Join(topics, " "); strings.Contains(raw, "leak") || strings.Contains(raw, "alias") {
		t.Fatalf("list reveals links: %q", raw)
	}
}

// TestHardLinkedTopic: a hard link is another name for the same file; one
// in the store to a file outside it (.env, where both are on one file
// system) cannot be told from a memory by its path. The store reads only
// files with a single name, so get and append refuse it and list skips it;
// set replaces the store's name (rename), leaving the other file as it is.
func TestHardLinkedTopic(t *testing.T) {
	project := linkProject(t)
	mem := filepath.Join(project, ".warden", "memories")
	os.MkdirAll(mem, 0o755)
	if err := os.Link(filepath.Join(project, ".env"), filepath.Join(mem, "leak.md")); err != nil {
		t.Skipf("hard links unsupported here: %v", err)
	}
	m, _ := New(Config{ProjectRoot: project}, nil)
	_, err := serve(t, m, readOnly, req{"op": "get", "topic": "leak"})
	wantRefused(t, err, project, `"leak"`, ".warden/memories/leak.md", "2 hard links")
	_, err = serve(t, m, rw, req{"op": "append", "topic": "leak", "value": "x"})
	wantRefused(t, err, project, `"leak"`, ".warden/memories/leak.md", "2 hard links")
	r := mustServe(t, m, readOnly, req{"op": "list"})
	if topics := r["topics"].([]any); len(topics) != 0 {
		t.Fatalf("list shows the hard link: %v", r)
	}
	if r["skipped"].(map[string]any)["hardLinks"] != 1.0 {
		t.Fatalf("list reply %v: want 1 skipped hard link", r)
	}
	mustServe(t, m, rw, req{"op": "set", "topic": "leak", "value": "mine"})
	if data, _ := os.ReadFile(filepath.Join(project, ".env")); string(data) != secretValue+"\n" {
		t.Fatalf(".env changed through its hard link: %q", data)
	}
	if got := mustServe(t, m, readOnly, req{"op": "get", "topic": "leak"}); got["value"] != "mine" {
		t.Fatalf("get after set = %v", got)
	}
}

// TestDenyListApplies: the fs deny-list, built-in and configured, covers the
// file a topic is stored in.
func TestDenyListApplies(t *testing.T) {
	project := linkProject(t)
	m, err := New(Config{ProjectRoot: project, Deny: []string{".warden/memories/private/**"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ topic, rule string }{
		{"id_rsa", `"id_rsa*" (built-in)`},
		{"private/plan", `".warden/memories/private/**" (security.deny)`},
	} {
		_, err := serve(t, m, rw, req{"op": "set", "topic": c.topic, "value": "v"})
		wantKind(t, err, tool.KindDenied)
		if !strings.Contains(err.Error(), c.rule) || !strings.Contains(err.Error(), c.topic) {
			t.Fatalf("set %q: %v", c.topic, err)
		}
	}
	// Written by hand, they are neither read nor listed.
	mem := filepath.Join(project, ".warden", "memories")
	os.MkdirAll(filepath.Join(mem, "private"), 0o755)
	os.WriteFile(filepath.Join(mem, "private", "plan.md"), []byte("p"), 0o644)
	os.WriteFile(filepath.Join(mem, "id_rsa.md"), []byte("k"), 0o644)
	_, err = serve(t, m, rw, req{"op": "get", "topic": "id_rsa"})
	wantKind(t, err, tool.KindDenied)
	r := mustServe(t, m, rw, req{"op": "list"})
	if len(r["topics"].([]any)) != 0 || r["skipped"].(map[string]any)["denied"] != 2.0 {
		t.Fatalf("list = %v", r)
	}
}

// TestSymlinkedLockFile: the lock file a link is refused, not opened.
func TestSymlinkedLockFile(t *testing.T) {
	project := linkProject(t)
	mustSymlink(t, "../.env", filepath.Join(project, ".warden", "memories.lock"))
	m, _ := New(Config{ProjectRoot: project}, nil)
	_, err := serve(t, m, rw, req{"op": "set", "topic": "x", "value": "v"})
	wantRefused(t, err, project, `"x"`, ".warden/memories.lock", "symbolic link")
}
