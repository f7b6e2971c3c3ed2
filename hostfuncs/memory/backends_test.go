package memory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/warden-run/warden/internal/pgtest"
	"github.com/warden-run/warden/tool"
)

// pg is the PostgreSQL server of this test binary (pgtest).
var pg *pgtest.Server

func TestMain(m *testing.M) {
	pg = pgtest.New() // started by the first test that asks for a database
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

// store names one backend under test. open returns a capability on the
// subtest's store: every call of one subtest shares the store, as replicas
// share a database (or processes a project directory). plant writes a value
// behind warden's back (an editor, another tool), bypassing every check.
type storeUnderTest struct {
	open  func(cfg Config) *Memory
	plant func(topic, value string)
}

// forEachBackend runs f against the file store and PostgreSQL.
func forEachBackend(t *testing.T, f func(t *testing.T, s storeUnderTest)) {
	t.Run("file", func(t *testing.T) {
		dir := t.TempDir()
		f(t, storeUnderTest{
			open: func(cfg Config) *Memory {
				t.Helper()
				cfg.ProjectRoot = dir
				m, err := New(cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				return m
			},
			plant: func(topic, value string) {
				p := filepath.Join(dir, memoriesDir, topic+".md")
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(value), 0o644); err != nil {
					t.Fatal(err)
				}
			},
		})
	})
	t.Run("postgres", func(t *testing.T) {
		url := pg.DB(t)
		dir := t.TempDir()
		pool, err := pgxpool.New(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		f(t, storeUnderTest{
			open: func(cfg Config) *Memory {
				t.Helper()
				cfg.ProjectRoot, cfg.Backend = dir, url
				m, err := NewContext(t.Context(), cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(m.Close)
				return m
			},
			plant: func(topic, value string) {
				// The table exists once the first capability opened.
				if _, err := pool.Exec(t.Context(), `INSERT INTO warden_memories VALUES ($1, $2, now())
					ON CONFLICT (topic) DO UPDATE SET value = excluded.value`, topic, []byte(value)); err != nil {
					t.Fatal(err)
				}
			},
		})
	})
}

func sqlExec(t *testing.T, url, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestBackendRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storeUnderTest) {
		m := s.open(Config{})
		if r := mustServe(t, m, rw, req{"op": "set", "topic": "arch/db", "value": "# DB\n"}); r["size"] != 5.0 {
			t.Fatalf("set reply %v", r)
		}
		if r := mustServe(t, m, rw, req{"op": "append", "topic": "arch/db", "value": "more\n"}); r["size"] != 10.0 {
			t.Fatalf("append reply %v", r)
		}
		r := mustServe(t, m, rw, req{"op": "get", "topic": "arch/db"})
		modified, err := time.Parse(time.RFC3339Nano, r["modified"].(string))
		if r["value"] != "# DB\nmore\n" || r["truncated"] != nil || err != nil || modified.IsZero() {
			t.Fatalf("get reply %v (%v)", r, err)
		}
		mustServe(t, m, rw, req{"op": "append", "topic": "arch", "value": "top"})
		mustServe(t, m, rw, req{"op": "set", "topic": "archive", "value": ""})
		mustServe(t, m, rw, req{"op": "set", "topic": "arch/x/y", "value": "deep"})
		mustServe(t, m, rw, req{"op": "set", "topic": "arch-b", "value": "dash sorts before slash"})
		if r := mustServe(t, m, rw, req{"op": "get", "topic": "archive"}); r["value"] != "" {
			t.Fatalf("empty value: %v", r)
		}
		if got := listTopics(t, m, rw, ""); !slices.Equal(got, []string{"arch", "arch-b", "arch/db", "arch/x/y", "archive"}) {
			t.Fatalf("list = %q", got)
		}
		if got := listTopics(t, m, rw, "arch"); !slices.Equal(got, []string{"arch", "arch/db", "arch/x/y"}) {
			t.Fatalf("list arch = %q", got)
		}
		if got := listTopics(t, m, rw, "arch/x"); !slices.Equal(got, []string{"arch/x/y"}) {
			t.Fatalf("list arch/x = %q", got)
		}
		list := mustServe(t, m, rw, req{"op": "list", "prefix": "arch/db"})
		entry := list["topics"].([]any)[0].(map[string]any)
		if entry["topic"] != "arch/db" || entry["size"] != 10.0 || entry["modified"] == nil {
			t.Fatalf("list entry %v", entry)
		}
		if r := mustServe(t, m, rw, req{"op": "delete", "topic": "arch/x/y"}); r["deleted"] != true {
			t.Fatalf("delete reply %v", r)
		}
		if r := mustServe(t, m, rw, req{"op": "delete", "topic": "arch/x/y"}); r["deleted"] != false {
			t.Fatalf("second delete reply %v", r)
		}
		_, err = serve(t, m, rw, req{"op": "get", "topic": "arch/x/y"})
		wantKind(t, err, tool.KindNotFound)
		if err.Error() != `not_found: memory get: no topic "arch/x/y"` {
			t.Fatalf("message %q", err)
		}
		// Another capability on the same store (a replica) sees it all.
		if r := mustServe(t, s.open(Config{}), rw, req{"op": "get", "topic": "arch/db"}); r["value"] != "# DB\nmore\n" {
			t.Fatalf("second replica get %v", r)
		}
		// Resources read through the same backend.
		topics, truncated, err := m.Topics()
		if err != nil || truncated || len(topics) != 4 {
			t.Fatalf("Topics = %v, %v, %v", topics, truncated, err)
		}
		if v, _, _, err := m.Read("arch"); string(v) != "top" || err != nil {
			t.Fatalf("Read = %q, %v", v, err)
		}
		_, _, _, err = m.Read("nope")
		wantKind(t, err, tool.KindNotFound)
	})
}

func TestBackendEmptyStore(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storeUnderTest) {
		m := s.open(Config{})
		if got := listTopics(t, m, rw, ""); len(got) != 0 {
			t.Fatalf("list = %q", got)
		}
		_, err := serve(t, m, rw, req{"op": "get", "topic": "a"})
		wantKind(t, err, tool.KindNotFound)
		if r := mustServe(t, m, rw, req{"op": "delete", "topic": "a"}); r["deleted"] != false {
			t.Fatalf("delete reply %v", r)
		}
	})
}

func TestBackendGrantsAndDenyRules(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storeUnderTest) {
		m := s.open(Config{Deny: []string{".warden/memories/private/**"}})
		mustServe(t, m, rw, req{"op": "set", "topic": "arch/db", "value": "v1"})
		mustServe(t, m, rw, req{"op": "set", "topic": "notes", "value": "private"})
		arch := callWith(tool.Capabilities{Memory: tool.MemoryReadWrite, MemoryTopics: []string{"arch"}})
		ro := callWith(tool.Capabilities{Memory: tool.MemoryRead})
		_, err := serve(t, m, arch, req{"op": "set", "topic": "notes", "value": "x"})
		wantKind(t, err, tool.KindDenied)
		_, err = serve(t, m, ro, req{"op": "append", "topic": "notes", "value": "x"})
		wantKind(t, err, tool.KindDenied)
		if !strings.Contains(err.Error(), "tools.grants.t.memory: read-write") {
			t.Fatalf("message %q", err)
		}
		if r := mustServe(t, m, ro, req{"op": "get", "topic": "notes"}); r["value"] != "private" {
			t.Fatalf("denied writes changed the value: %v", r)
		}
		if got := listTopics(t, m, arch, ""); !slices.Equal(got, []string{"arch/db"}) {
			t.Fatalf("grant-limited list = %q", got)
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
		// Stored behind warden's back, they are neither read nor listed.
		s.plant("private/plan", "p")
		s.plant("id_rsa", "k")
		_, err = serve(t, m, rw, req{"op": "get", "topic": "id_rsa"})
		wantKind(t, err, tool.KindDenied)
		r := mustServe(t, m, rw, req{"op": "list"})
		if len(r["topics"].([]any)) != 2 || r["skipped"].(map[string]any)["denied"] != 2.0 {
			t.Fatalf("list = %v", r)
		}
	})
}

func TestBackendValueLimit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storeUnderTest) {
		m := s.open(Config{MaxValueBytes: 10})
		mustServe(t, m, rw, req{"op": "set", "topic": "a", "value": "0123456789"})
		_, err := serve(t, m, rw, req{"op": "set", "topic": "a", "value": "0123456789x"})
		wantKind(t, err, tool.KindInvalidArguments)
		if want := `invalid_arguments: memory set "a": value would be 11 bytes, over the limit of 10`; err.Error() != want {
			t.Fatalf("message %q, want %q", err, want)
		}
		_, err = serve(t, m, rw, req{"op": "append", "topic": "a", "value": "xy"})
		wantKind(t, err, tool.KindInvalidArguments)
		if want := `invalid_arguments: memory append "a": value would be 12 bytes, over the limit of 10`; err.Error() != want {
			t.Fatalf("message %q, want %q", err, want)
		}
		if r := mustServe(t, m, rw, req{"op": "get", "topic": "a"}); r["value"] != "0123456789" {
			t.Fatalf("refused writes changed the value: %v", r)
		}
		// A value grown past the limit outside warden reads back cut.
		s.plant("a", "0123456789abc")
		if r := mustServe(t, m, rw, req{"op": "get", "topic": "a"}); r["value"] != "0123456789" || r["truncated"] != true {
			t.Fatalf("oversized value: %v", r)
		}
	})
}

// TestBackendConcurrentAppends: separate capabilities share nothing in
// memory, like replicas: only the store keeps their appends apart, and none
// is lost.
func TestBackendConcurrentAppends(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storeUnderTest) {
		const writers, each = 6, 30
		var wg sync.WaitGroup
		for w := range writers {
			m := s.open(Config{})
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
		value := mustServe(t, s.open(Config{}), rw, req{"op": "get", "topic": "log"})["value"].(string)
		if len(value) != writers*each {
			t.Fatalf("value has %d bytes, want %d", len(value), writers*each)
		}
		for w := range writers {
			if n := strings.Count(value, string(rune('a'+w))); n != each {
				t.Fatalf("writer %d: %d appends survived, want %d (value %q)", w, n, each, value)
			}
		}
	})
}

// TestBackendListTruncated: a listing stops at maxListed and says so.
func TestBackendListTruncated(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storeUnderTest) {
		m := s.open(Config{})
		for i := range maxListed + 1 {
			s.plant(fmt.Sprintf("t/%04d", i), "v")
		}
		s.plant("u", "v")
		r := mustServe(t, m, rw, req{"op": "list", "prefix": "t"})
		topics := r["topics"].([]any)
		if len(topics) != maxListed || r["truncated"] != true || topics[maxListed-1].(map[string]any)["topic"] != fmt.Sprintf("t/%04d", maxListed-1) {
			t.Fatalf("list: %d topics, truncated %v", len(topics), r["truncated"])
		}
	})
}

// TestBackendTopics: bad topics are refused before any backend is asked,
// and the longest and deepest valid ones round-trip on both.
func TestBackendTopics(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s storeUnderTest) {
		m := s.open(Config{})
		for _, topic := range []string{"../x", "/abs", ".hidden", "a//b", "a\x00b", "x.md", strings.Repeat("a", MaxTopicBytes+1)} {
			_, err := serve(t, m, rw, req{"op": "set", "topic": topic, "value": "pwned"})
			wantKind(t, err, tool.KindInvalidArguments)
		}
		for _, topic := range []string{strings.Repeat("a", maxComponentBytes), strings.Repeat("b/", MaxTopicDepth-1) + "b", "v1.2_x-y"} {
			mustServe(t, m, rw, req{"op": "set", "topic": topic, "value": topic})
			if r := mustServe(t, m, rw, req{"op": "get", "topic": topic}); r["value"] != topic {
				t.Fatalf("get %q = %v", topic, r)
			}
		}
		if got := listTopics(t, m, rw, ""); len(got) != 3 {
			t.Fatalf("list = %q", got)
		}
	})
}
