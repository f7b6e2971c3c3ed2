package memory

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/tool"
)

type nopObserver struct{}

func (nopObserver) Progress(tool.Progress) {}
func (nopObserver) Log(slog.Level, string) {}

func callWith(g tool.Capabilities) *hostfuncs.Call {
	return &hostfuncs.Call{Tool: "t", Grants: g, Observer: nopObserver{}}
}

var rw = callWith(tool.Capabilities{Memory: tool.MemoryReadWrite})

func newMemory(t *testing.T) (*Memory, string) {
	t.Helper()
	dir := t.TempDir()
	m, err := New(Config{ProjectRoot: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m, dir
}

// serve sends req (marshalled) and returns the reply re-decoded as a map.
func serve(t *testing.T, m *Memory, call *hostfuncs.Call, req any) (map[string]any, error) {
	t.Helper()
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Serve(t.Context(), call, raw)
	if err != nil {
		if out != nil {
			t.Fatalf("Serve returned both %v and %v", out, err)
		}
		return nil, err
	}
	raw, err = json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var reply map[string]any
	if err := json.Unmarshal(raw, &reply); err != nil {
		t.Fatal(err)
	}
	return reply, nil
}

func mustServe(t *testing.T, m *Memory, call *hostfuncs.Call, req any) map[string]any {
	t.Helper()
	reply, err := serve(t, m, call, req)
	if err != nil {
		t.Fatalf("%v: %v", req, err)
	}
	return reply
}

func wantKind(t *testing.T, err error, kind tool.Kind) {
	t.Helper()
	if got := tool.KindOf(err); got != kind {
		t.Fatalf("error kind = %q (%v), want %q", got, err, kind)
	}
}

type req = map[string]any

func TestRoundTrip(t *testing.T) {
	m, dir := newMemory(t)
	if r := mustServe(t, m, rw, req{"op": "set", "topic": "arch/db", "value": "# DB\n"}); r["size"] != 5.0 {
		t.Fatalf("set reply %v", r)
	}
	if r := mustServe(t, m, rw, req{"op": "append", "topic": "arch/db", "value": "more\n"}); r["size"] != 10.0 {
		t.Fatalf("append reply %v", r)
	}
	r := mustServe(t, m, rw, req{"op": "get", "topic": "arch/db"})
	if r["value"] != "# DB\nmore\n" || r["truncated"] != nil || r["modified"] == nil {
		t.Fatalf("get reply %v", r)
	}
	data, err := os.ReadFile(filepath.Join(dir, ".warden", "memories", "arch", "db.md"))
	if err != nil || string(data) != "# DB\nmore\n" {
		t.Fatalf("file = %q, %v", data, err)
	}
	mustServe(t, m, rw, req{"op": "append", "topic": "arch", "value": "top"})
	mustServe(t, m, rw, req{"op": "set", "topic": "archive", "value": ""})
	mustServe(t, m, rw, req{"op": "set", "topic": "arch/x/y", "value": "deep"})

	if got := listTopics(t, m, rw, ""); !slices.Equal(got, []string{"arch", "arch/db", "arch/x/y", "archive"}) {
		t.Fatalf("list = %q", got)
	}
	if got := listTopics(t, m, rw, "arch"); !slices.Equal(got, []string{"arch", "arch/db", "arch/x/y"}) {
		t.Fatalf("list arch = %q", got)
	}
	if got := listTopics(t, m, rw, "arch/x"); !slices.Equal(got, []string{"arch/x/y"}) {
		t.Fatalf("list arch/x = %q", got)
	}

	if r := mustServe(t, m, rw, req{"op": "delete", "topic": "arch/x/y"}); r["deleted"] != true {
		t.Fatalf("delete reply %v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, ".warden", "memories", "arch", "x")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("empty directory left behind: %v", err)
	}
	if r := mustServe(t, m, rw, req{"op": "delete", "topic": "arch/x/y"}); r["deleted"] != false {
		t.Fatalf("second delete reply %v", r)
	}
	_, err = serve(t, m, rw, req{"op": "get", "topic": "arch/x/y"})
	wantKind(t, err, tool.KindNotFound)
}

func listTopics(t *testing.T, m *Memory, call *hostfuncs.Call, prefix string) []string {
	t.Helper()
	r := mustServe(t, m, call, req{"op": "list", "prefix": prefix})
	var topics []string
	for _, e := range r["topics"].([]any) {
		topics = append(topics, e.(map[string]any)["topic"].(string))
	}
	return topics
}

func TestEmptyStore(t *testing.T) {
	m, dir := newMemory(t)
	if got := listTopics(t, m, rw, ""); len(got) != 0 {
		t.Fatalf("list = %q", got)
	}
	_, err := serve(t, m, rw, req{"op": "get", "topic": "a"})
	wantKind(t, err, tool.KindNotFound)
	if r := mustServe(t, m, rw, req{"op": "delete", "topic": "a"}); r["deleted"] != false {
		t.Fatalf("delete reply %v", r)
	}
	// Reads never create the store.
	if _, err := os.Stat(filepath.Join(dir, ".warden", "memories")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("reads created the store: %v", err)
	}
}

// snapshot lists every file under dir with its content, to prove a refused
// request changed nothing.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			files[rel+"/"] = ""
			return nil
		}
		data, _ := os.ReadFile(p)
		files[rel] = string(data)
		return nil
	})
	return files
}

func TestDenied(t *testing.T) {
	m, dir := newMemory(t)
	mustServe(t, m, rw, req{"op": "set", "topic": "arch/db", "value": "v1"})
	mustServe(t, m, rw, req{"op": "set", "topic": "notes", "value": "private"})
	before := snapshot(t, dir)

	none := callWith(tool.Capabilities{})
	ro := callWith(tool.Capabilities{Memory: tool.MemoryRead})
	arch := callWith(tool.Capabilities{Memory: tool.MemoryReadWrite, MemoryTopics: []string{"arch"}})
	bogus := callWith(tool.Capabilities{Memory: "write"})
	for _, tc := range []struct {
		name string
		call *hostfuncs.Call
		req  any
		want string // in the message
	}{
		{"no grant get", none, req{"op": "get", "topic": "arch/db"}, "tools.grants.t.memory:"},
		{"no grant list", none, req{"op": "list"}, "tools.grants.t.memory:"},
		{"no grant set", none, req{"op": "set", "topic": "arch/db", "value": "x"}, "tools.grants.t.memory:"},
		{"no grant garbage", none, "not an object", "tools.grants.t.memory:"},
		{"unknown access level", bogus, req{"op": "get", "topic": "arch/db"}, "tools.grants.t.memory:"},
		{"read-only set", ro, req{"op": "set", "topic": "arch/db", "value": "x"}, "tools.grants.t.memory: read-write"},
		{"read-only append", ro, req{"op": "append", "topic": "arch/db", "value": "x"}, "tools.grants.t.memory: read-write"},
		{"read-only delete", ro, req{"op": "delete", "topic": "arch/db"}, "tools.grants.t.memory: read-write"},
		{"outside prefix get", arch, req{"op": "get", "topic": "notes"}, "tools.grants.t.memory_topics"},
		{"outside prefix set", arch, req{"op": "set", "topic": "notes", "value": "x"}, "tools.grants.t.memory_topics"},
		{"prefix is not a string prefix", arch, req{"op": "set", "topic": "archive", "value": "x"}, "tools.grants.t.memory_topics"},
		{"outside prefix delete", arch, req{"op": "delete", "topic": "notes"}, "tools.grants.t.memory_topics"},
		{"outside prefix list", arch, req{"op": "list", "prefix": "notes"}, "tools.grants.t.memory_topics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply, err := serve(t, m, tc.call, tc.req)
			wantKind(t, err, tool.KindDenied)
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"t"`) {
				t.Fatalf("message %q does not name the tool and %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "private") || reply != nil {
				t.Fatalf("leaked: %v %v", reply, err)
			}
		})
	}
	if after := snapshot(t, dir); !mapsEqual(before, after) {
		t.Fatalf("denied requests changed the store:\nbefore %v\nafter  %v", before, after)
	}
	// What the grants do allow still works.
	if r := mustServe(t, m, ro, req{"op": "get", "topic": "notes"}); r["value"] != "private" {
		t.Fatalf("read-only get: %v", r)
	}
	if got := listTopics(t, m, arch, ""); !slices.Equal(got, []string{"arch/db"}) {
		t.Fatalf("prefix-limited list = %q", got)
	}
	mustServe(t, m, arch, req{"op": "set", "topic": "arch", "value": "ok"})
	narrow := callWith(tool.Capabilities{Memory: tool.MemoryRead, MemoryTopics: []string{"arch/db"}})
	if got := listTopics(t, m, narrow, "arch"); !slices.Equal(got, []string{"arch/db"}) {
		t.Fatalf("list of a prefix containing the grant = %q", got)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestBadTopics(t *testing.T) {
	parent := t.TempDir()
	project := filepath.Join(parent, "project")
	os.Mkdir(project, 0o755)
	os.WriteFile(filepath.Join(parent, "x.md"), []byte("outside"), 0o644)
	m, err := New(Config{ProjectRoot: project}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustServe(t, m, rw, req{"op": "set", "topic": "ok", "value": "v"})
	before := snapshot(t, parent)
	for _, topic := range []string{
		"../x", "a/../../b", "../../../../x", "/abs", "/etc/passwd", ".hidden", "a/.hidden", ".", "..",
		"a\x00b", "a\\b", "..\\x", "a//b", "a/", "/", "", "a b", "é", "x.md", "a/X.MD/b", ".tmp-1234",
		strings.Repeat("a", MaxTopicBytes+1), strings.Repeat("a", maxComponentBytes+1),
		strings.Repeat("a/", MaxTopicDepth) + "a",
	} {
		for _, op := range []string{"get", "set", "append", "delete"} {
			r := req{"op": op, "topic": topic}
			if op == "set" || op == "append" {
				r["value"] = "pwned"
			}
			reply, err := serve(t, m, rw, r)
			wantKind(t, err, tool.KindInvalidArguments)
			if reply != nil {
				t.Fatalf("%s %q replied %v", op, topic, reply)
			}
		}
		if topic == "" {
			continue // "" is list's "everything"
		}
		_, err := serve(t, m, rw, req{"op": "list", "prefix": topic})
		wantKind(t, err, tool.KindInvalidArguments)
	}
	if after := snapshot(t, parent); !mapsEqual(before, after) {
		t.Fatalf("bad topics changed files:\nbefore %v\nafter  %v", before, after)
	}
	// The longest and deepest valid topics work.
	for _, topic := range []string{strings.Repeat("a", maxComponentBytes), strings.Repeat("b/", MaxTopicDepth-1) + "b", "v1.2_x-y"} {
		mustServe(t, m, rw, req{"op": "set", "topic": topic, "value": topic})
		if r := mustServe(t, m, rw, req{"op": "get", "topic": topic}); r["value"] != topic {
			t.Fatalf("get %q = %v", topic, r)
		}
	}
}

func TestBadRequests(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storeUnderTest) { testBadRequests(t, s.open(Config{})) })
}

func testBadRequests(t *testing.T, m *Memory) {
	for _, raw := range []string{
		``, `{`, `[]`, `{"op":"get","topic":"a"} {}`, `{"op":"frob","topic":"a"}`, `{"op":"GET","topic":"a"}`,
		`{"op":"get","topic":"a","extra":1}`, `{"op":"set","topic":"a"}`, `{"op":"set","topic":"a","value":null}`,
		`{"op":"get","topic":"a","value":"x"}`, `{"op":"list","topic":"a"}`, `{"op":"get","topic":"a","prefix":"b"}`,
	} {
		out, err := m.Serve(t.Context(), rw, []byte(raw))
		wantKind(t, err, tool.KindInvalidArguments)
		if out != nil {
			t.Fatalf("%s: replied %v", raw, out)
		}
	}
}

func TestValueLimit(t *testing.T) {
	dir := t.TempDir()
	m, err := New(Config{ProjectRoot: dir, MaxValueBytes: 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustServe(t, m, rw, req{"op": "set", "topic": "a", "value": "0123456789"})
	_, err = serve(t, m, rw, req{"op": "set", "topic": "a", "value": "0123456789x"})
	wantKind(t, err, tool.KindInvalidArguments)
	_, err = serve(t, m, rw, req{"op": "append", "topic": "a", "value": "x"})
	wantKind(t, err, tool.KindInvalidArguments)
	if r := mustServe(t, m, rw, req{"op": "get", "topic": "a"}); r["value"] != "0123456789" {
		t.Fatalf("refused writes changed the value: %v", r)
	}
	// A file grown past the limit by hand reads back cut, and says so.
	os.WriteFile(filepath.Join(dir, ".warden", "memories", "a.md"), []byte("0123456789abc"), 0o644)
	if r := mustServe(t, m, rw, req{"op": "get", "topic": "a"}); r["value"] != "0123456789" || r["truncated"] != true {
		t.Fatalf("oversized file: %v", r)
	}
	// The default limit applies when none is configured.
	m2, _ := New(Config{ProjectRoot: dir}, nil)
	_, err = serve(t, m2, rw, req{"op": "set", "topic": "big", "value": strings.Repeat("x", DefaultMaxValueBytes+1)})
	wantKind(t, err, tool.KindInvalidArguments)
	mustServe(t, m2, rw, req{"op": "set", "topic": "big", "value": strings.Repeat("x", DefaultMaxValueBytes)})
}

func TestSetConfig(t *testing.T) {
	m, first := newMemory(t)
	mustServe(t, m, rw, req{"op": "set", "topic": "a", "value": "first"})
	second := t.TempDir()
	if err := m.SetConfig(Config{ProjectRoot: second, MaxValueBytes: 3}); err != nil {
		t.Fatal(err)
	}
	_, err := serve(t, m, rw, req{"op": "get", "topic": "a"})
	wantKind(t, err, tool.KindNotFound)
	_, err = serve(t, m, rw, req{"op": "set", "topic": "a", "value": "four"})
	wantKind(t, err, tool.KindInvalidArguments)
	mustServe(t, m, rw, req{"op": "set", "topic": "a", "value": "two"})
	for _, bad := range []Config{{}, {ProjectRoot: first, MaxValueBytes: -1}} {
		if err := m.SetConfig(bad); err == nil {
			t.Fatalf("SetConfig(%+v) accepted", bad)
		}
	}
	if r := mustServe(t, m, rw, req{"op": "get", "topic": "a"}); r["value"] != "two" {
		t.Fatalf("a refused config changed the live one: %v", r)
	}
	if _, err := New(Config{}, nil); err == nil {
		t.Fatal("New accepted an empty config")
	}
}

func TestSymlinksStayInside(t *testing.T) {
	parent := t.TempDir()
	secret := filepath.Join(parent, "secret.md")
	os.WriteFile(secret, []byte("TOP SECRET"), 0o644)
	project := filepath.Join(parent, "project")
	mem := filepath.Join(project, ".warden", "memories")
	os.MkdirAll(mem, 0o755)
	os.Symlink(secret, filepath.Join(mem, "leak.md"))
	os.Symlink(parent, filepath.Join(mem, "up"))
	m, _ := New(Config{ProjectRoot: project}, nil)

	for _, topic := range []string{"leak", "up/secret"} {
		reply, err := serve(t, m, rw, req{"op": "get", "topic": topic})
		if err == nil || strings.Contains(err.Error(), "TOP SECRET") || strings.Contains(err.Error(), parent) {
			t.Fatalf("get %q: %v %v", topic, reply, err)
		}
		_, err = serve(t, m, rw, req{"op": "set", "topic": topic, "value": "overwritten"})
		if err == nil && topic == "up/secret" {
			t.Fatalf("set %q through a symlink out of the store succeeded", topic)
		}
	}
	if data, _ := os.ReadFile(secret); string(data) != "TOP SECRET" {
		t.Fatalf("file outside the store changed: %q", data)
	}
	if got := listTopics(t, m, rw, ""); slices.Contains(got, "up/secret") {
		t.Fatalf("list followed a symlink out of the store: %q", got)
	}

	// The memories directory itself replaced by a symlink out of the project.
	project2 := filepath.Join(parent, "project2")
	os.MkdirAll(filepath.Join(project2, ".warden"), 0o755)
	os.Symlink(parent, filepath.Join(project2, ".warden", "memories"))
	m2, _ := New(Config{ProjectRoot: project2}, nil)
	_, err := serve(t, m2, rw, req{"op": "get", "topic": "secret"})
	wantKind(t, err, tool.KindDenied)
	if strings.Contains(err.Error(), "TOP SECRET") || strings.Contains(err.Error(), parent) {
		t.Fatalf("message leaks: %v", err)
	}
}

func TestConcurrentAppends(t *testing.T) {
	_, dir := newMemory(t)
	// Separate capabilities share nothing in memory, like separate
	// processes: only the file lock keeps their appends apart.
	const writers, each = 4, 25
	var wg sync.WaitGroup
	for w := range writers {
		m, err := New(Config{ProjectRoot: dir}, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for range each {
				if _, err := serve(t, m, rw, req{"op": "append", "topic": "log", "value": string(rune('a' + w))}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	m, _ := New(Config{ProjectRoot: dir}, nil)
	value := mustServe(t, m, rw, req{"op": "get", "topic": "log"})["value"].(string)
	for w := range writers {
		if n := strings.Count(value, string(rune('a'+w))); n != each {
			t.Fatalf("writer %d: %d appends survived, want %d (value %q)", w, n, each, value)
		}
	}
}

func TestLockWaitHonoursContext(t *testing.T) {
	m, _ := newMemory(t)
	unlock, err := m.front.Load().backend.(*store).lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = m.Serve(ctx, rw, []byte(`{"op":"set","topic":"a","value":"x"}`))
	wantKind(t, err, tool.KindTimeout)
	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	_, err = m.Serve(ctx, rw, []byte(`{"op":"delete","topic":"a"}`))
	wantKind(t, err, tool.KindCancelled)
	// Reads never wait for the lock.
	_, err = serve(t, m, rw, req{"op": "get", "topic": "a"})
	wantKind(t, err, tool.KindNotFound)
	unlock()
	mustServe(t, m, rw, req{"op": "set", "topic": "a", "value": "x"})
}

func TestStaleTempFilesAreIgnoredAndRemoved(t *testing.T) {
	m, dir := newMemory(t)
	mustServe(t, m, rw, req{"op": "set", "topic": "a/b", "value": "x"})
	stale := filepath.Join(dir, ".warden", "memories", "a", tempPrefix+"deadbeef")
	os.WriteFile(stale, []byte("half a val"), 0o644)
	os.WriteFile(filepath.Join(dir, ".warden", "memories", "stray.txt"), nil, 0o644)
	if got := listTopics(t, m, rw, ""); !slices.Equal(got, []string{"a/b"}) {
		t.Fatalf("list = %q", got)
	}
	mustServe(t, m, rw, req{"op": "set", "topic": "a/c", "value": "y"})
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stale temp file survived a write under the lock: %v", err)
	}
}

func TestLogsNeverHoldValues(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storeUnderTest) {
		var buf strings.Builder
		m := s.open(Config{})
		m.logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		testLogsNeverHoldValues(t, m, &buf)
	})
}

func testLogsNeverHoldValues(t *testing.T, m *Memory, buf *strings.Builder) {
	mustServe(t, m, rw, req{"op": "set", "topic": "a", "value": "s3cr3t-value"})
	mustServe(t, m, rw, req{"op": "get", "topic": "a"})
	serve(t, m, callWith(tool.Capabilities{}), req{"op": "set", "topic": "a", "value": "s3cr3t-value"})
	if !strings.Contains(buf.String(), "topic=a") || strings.Contains(buf.String(), "s3cr3t") {
		t.Fatalf("log:\n%s", buf.String())
	}
}
