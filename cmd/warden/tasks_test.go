package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/warden-run/warden/internal/osfile"
	"github.com/warden-run/warden/internal/tasks"
)

// taskWorld is a project whose task store holds three tasks of three
// owners: one working on replica-a, one completed with a result, one
// whose tool name and message carry terminal escapes.
type taskWorld struct {
	dir                       string
	store                     tasks.Store
	working, done, hostile    tasks.Task
	workingOwner, hostileTool string
}

func newTaskWorld(t *testing.T, store tasks.Store, dir string) *taskWorld {
	w := &taskWorld{dir: dir, store: store}
	now := time.Now().UTC().Truncate(time.Second)
	mk := func(owner, tool string, offset time.Duration) tasks.Task {
		task := tasks.Task{ID: tasks.NewID(), Owner: owner, Tool: tool, Created: now.Add(offset), TTL: time.Hour,
			Replica: "replica-a", LeaseUntil: now.Add(time.Hour)}
		if err := store.Create(t.Context(), task, tasks.Bounds{}); err != nil {
			t.Fatal(err)
		}
		return task
	}
	w.working = mk("oauth:19:https://idp.example:alice", "build", 0)
	w.done = mk("token", "scan", time.Second)
	w.hostile = mk("local:stdio-1", "evil\x1b[2Jtool", 2*time.Second)
	if _, err := store.Update(t.Context(), "token", w.done.ID, tasks.Bounds{}, func(t *tasks.Task) {
		t.Status, t.StatusMessage, t.Result = tasks.Completed, "done", json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Update(t.Context(), "local:stdio-1", w.hostile.ID, tasks.Bounds{}, func(t *tasks.Task) {
		t.StatusMessage = "step 3\x1b]0;owned\x07 of 10"
	}); err != nil {
		t.Fatal(err)
	}
	return w
}

// check runs the CLI on w's project and checks what the operator sees.
func (w *taskWorld) check(t *testing.T, env []string, where string) {
	stdout, stderr, code := runIn(t, w.dir, env, "tasks", "list")
	if code != 0 || stderr != "" {
		t.Fatalf("warden tasks list: exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID ") {
		t.Fatalf("warden tasks list:\n%s", stdout)
	}
	// Every owner's task, oldest first, each with its owner and status.
	for i, want := range [][]string{
		{w.working.ID, "working", "build", "oauth:19:https://idp.example:alice"},
		{w.done.ID, "completed", "scan", "token", "done"},
		{w.hostile.ID, "working", `evil\x1b[2Jtool`, "local:stdio-1", `step 3\x1b]0;owned\x07 of 10`},
	} {
		if got := strings.Fields(lines[i+1]); len(got) < len(want) || !slices.Equal(got[:3], want[:3]) || got[3] != want[3] {
			t.Errorf("line %d: %q, want %q", i+1, lines[i+1], want)
		}
		for _, field := range want {
			if !strings.Contains(lines[i+1], field) {
				t.Errorf("line %d lacks %q: %q", i+1, field, lines[i+1])
			}
		}
	}
	if strings.ContainsAny(stdout, "\x1b\x07") {
		t.Errorf("warden tasks list printed a raw terminal escape:\n%q", stdout)
	}
	stdout, _, code = runIn(t, w.dir, env, "tasks", "list", "--json")
	var listed []tasks.Task
	if err := json.Unmarshal([]byte(stdout), &listed); code != 0 || err != nil || len(listed) != 3 || listed[2].Owner != "local:stdio-1" || listed[2].Tool != w.hostile.Tool {
		t.Errorf("warden tasks list --json: exit %d, %v: %q", code, err, stdout)
	}

	stdout, stderr, code = runIn(t, w.dir, env, "tasks", "show", w.done.ID)
	wantShow := "id:       " + w.done.ID + "\ntool:     scan\nowner:    token\nstatus:   completed\nmessage:  done\n"
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, wantShow) ||
		!strings.Contains(stdout, "replica:  replica-a (lease until ") ||
		!strings.HasSuffix(stdout, "result:\n{\n  \"content\": [\n    {\n      \"type\": \"text\",\n      \"text\": \"ok\"\n    }\n  ]\n}\n") {
		t.Errorf("warden tasks show: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}

	// A cancel from the CLI reaches the replica running the task at its
	// next renewal.
	stdout, stderr, code = runIn(t, w.dir, env, "tasks", "cancel", w.working.ID)
	if want := "cancel requested for task " + w.working.ID + " (tool build, owner oauth:19:https://idp.example:alice): the server running it stops it at its next lease renewal, and it ends cancelled\n"; code != 0 || stderr != "" || stdout != want {
		t.Errorf("warden tasks cancel: exit %d, stderr %q, stdout %q", code, stderr, stdout)
	}
	stop, err := w.store.Renew(t.Context(), "replica-a", []string{w.working.ID, w.hostile.ID}, time.Now().Add(time.Hour))
	if err != nil || !slices.Equal(stop, []string{w.working.ID}) {
		t.Errorf("renew after the CLI's cancel: %v, %v; want the cancelled task", stop, err)
	}
	if stdout, _, _ := runIn(t, w.dir, env, "tasks", "show", w.working.ID); !strings.Contains(stdout, "status:   working, cancel requested\n") {
		t.Errorf("warden tasks show after cancel:\n%s", stdout)
	}

	_, stderr, code = runIn(t, w.dir, env, "tasks", "cancel", w.done.ID)
	if want := "warden: task " + w.done.ID + " has already ended (completed)\n"; code != exitToolError || stderr != want {
		t.Errorf("cancel of an ended task: exit %d, stderr %q", code, stderr)
	}
	unknown := tasks.NewID()
	for _, sub := range []string{"show", "cancel"} {
		_, stderr, code = runIn(t, w.dir, env, "tasks", sub, unknown)
		if want := "warden: no task " + unknown + " in " + where + "\n"; code != exitToolError || stderr != want {
			t.Errorf("%s of an unknown task: exit %d, stderr %q, want %q", sub, code, stderr, want)
		}
	}
}

// TestTasksCLIFile: warden tasks, run by the operator on a project whose
// server keeps tasks in files, lists every client's tasks with their
// owners, shows one, and cancels one so that its server stops it.
func TestTasksCLIFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("tools: {dir: bin}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Before any task: nothing listed, and nothing created by listing.
	stdout, stderr, code := runIn(t, dir, nil, "tasks")
	storeDir := tasks.DefaultDir(dir)
	if want := "no tasks in " + storeDir + "\n"; code != 0 || stderr != "" || stdout != want {
		t.Errorf("warden tasks on a project without tasks: exit %d, stderr %q, stdout %q", code, stderr, stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, ".warden")); err == nil {
		t.Error("warden tasks created the store's directory")
	}
	store, err := tasks.OpenFile(storeDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	newTaskWorld(t, store, dir).check(t, nil, storeDir)
}

// TestTasksCLIPostgres: the same on the PostgreSQL database replicas share
// (tasks.backend follows memory.backend, here from the environment).
func TestTasksCLIPostgres(t *testing.T) {
	url := pg.DB(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("tools: {dir: bin}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := tasks.OpenPostgres(t.Context(), url, tasks.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	newTaskWorld(t, store, dir).check(t, []string{"WARDEN_MEMORY_BACKEND=" + url}, "the PostgreSQL database of tasks.backend")
	if _, err := os.Stat(filepath.Join(dir, ".warden")); err == nil {
		t.Error("warden tasks on PostgreSQL made a file store")
	}
}

// TestTasksCLIRefusesBadIDs: an argument that is no task id is a usage
// error, quoted and escaped, and reaches no store.
func TestTasksCLIRefusesBadIDs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("tools: {dir: bin}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"../../etc/passwd", strings.ToUpper(tasks.NewID()), "x\x1b[2J"} {
		for _, sub := range []string{"show", "cancel"} {
			stdout, stderr, code := runIn(t, dir, nil, "tasks", sub, arg)
			if !strings.HasPrefix(stderr, "warden: \"") || !strings.HasSuffix(stderr, "\" is not a task id (32 lowercase hex digits, as warden tasks list shows them)\n") ||
				code != exitUsage || stdout != "" || strings.Contains(stderr, "\x1b") {
				t.Errorf("warden tasks %s %q: exit %d, stdout %q, stderr %q", sub, arg, code, stdout, stderr)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".warden")); err == nil {
		t.Error("a refused id created the store's directory")
	}
}

// TestTasksCLIBadRows: rows written into the database past the store (an
// id with a terminal escape, a status no task has, a result that is not
// JSON) neither reach the terminal nor break the listing.
func TestTasksCLIBadRows(t *testing.T) {
	url := pg.DB(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("tools: {dir: bin}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := tasks.OpenPostgres(t.Context(), url, tasks.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	good := tasks.Task{ID: tasks.NewID(), Owner: "token", Tool: "build", TTL: time.Hour}
	if err := store.Create(t.Context(), good, tasks.Bounds{}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	notJSON := tasks.NewID()
	for _, row := range []struct{ id, status, result string }{
		{"\x1b[2J" + strings.Repeat("a", 28), "working", ""},
		{tasks.NewID(), "work\x1b[2Jing", ""},
		{notJSON, "completed", "{\"content\": \xff"},
	} {
		if _, err := conn.Exec(t.Context(), `INSERT INTO warden_tasks (id, owner, tool, status, status_message, created, updated, ttl, expires,
			poll_interval, result, replica, cancel_requested) VALUES ($1, 'token', 't', $2, '', now(), now(), 3600000000000, now() + interval '1 hour', 0, $3, '', false)`,
			row.id, row.status, []byte(row.result)); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"WARDEN_MEMORY_BACKEND=" + url}
	stdout, stderr, code := runIn(t, dir, env, "tasks", "list")
	if code != 0 || strings.ContainsAny(stdout+stderr, "\x1b") || !strings.Contains(stdout, good.ID) || !strings.Contains(stdout, notJSON) ||
		strings.Count(stdout, "\n") != 3 {
		t.Errorf("warden tasks list beside bad rows: exit %d, stderr %q, stdout:\n%q", code, stderr, stdout)
	}
	stdout, stderr, code = runIn(t, dir, env, "tasks", "list", "--json")
	var listed []tasks.Task
	if err := json.Unmarshal([]byte(stdout), &listed); code != 0 || err != nil || len(listed) != 2 {
		t.Errorf("warden tasks list --json beside bad rows: exit %d, %v, stderr %q, stdout %q", code, err, stderr, stdout)
	}
	stdout, _, code = runIn(t, dir, env, "tasks", "show", notJSON)
	if code != 0 || !strings.Contains(stdout, "result:   (13 bytes, not JSON)\n") {
		t.Errorf("warden tasks show of a result that is not JSON: exit %d:\n%s", code, stdout)
	}
}

// TestTasksCLIRefusesAnotherUsersStore: run as another user than the
// store's (sudo warden tasks cancel), the CLI refuses before it opens the
// store, and says as whom to run it: its lock file or a record it
// rewrote, private to it, would lock the server out.
func TestTasksCLIRefusesAnotherUsersStore(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give the store to another user")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("tools: {dir: bin}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	storeDir := tasks.DefaultDir(dir)
	store, err := tasks.OpenFile(storeDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	task := tasks.Task{ID: tasks.NewID(), Owner: "token", Tool: "build", TTL: time.Hour}
	if err := store.Create(t.Context(), task, tasks.Bounds{}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	const uid = 4242
	if err := filepath.WalkDir(storeDir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	}); err != nil {
		t.Fatal(err)
	}
	want := "warden: the task store " + storeDir + " belongs to uid 4242, not to this user (uid 0): run warden tasks as uid 4242, the user the server runs as; " +
		"a lock file or record written as this user would be unreadable to the server\n"
	for _, args := range [][]string{{"tasks", "cancel", task.ID}, {"tasks", "list"}, {"tasks", "show", task.ID}} {
		stdout, stderr, code := runIn(t, dir, nil, args...)
		if code == 0 || stderr != want || stdout != "" {
			t.Errorf("warden %s as root: exit %d, stdout %q, stderr %q, want %q", strings.Join(args, " "), code, stdout, stderr, want)
		}
	}
	record := filepath.Join(storeDir, task.ID+".task")
	info, err := os.Stat(record)
	if err != nil {
		t.Fatal(err)
	}
	if owner, _, _, err := osfile.Owner(record, info); err != nil || owner.UID != uid {
		t.Errorf("the record after the refusals belongs to %v (%v)", owner, err)
	}
}

// pagedStore lists its tasks two a page; asked for a page, it checks that
// every task of the pages before is printed already.
type pagedStore struct {
	tasks.OperatorStore
	all   []tasks.Task
	pages int
	out   *bytes.Buffer
	held  []string // tasks asked past before they were printed
}

func (p *pagedStore) ListAll(_ context.Context, cursor string, _ int) ([]tasks.Task, string, error) {
	i := 0
	if cursor != "" {
		i, _ = strconv.Atoi(cursor)
	}
	end := min(i+2, len(p.all))
	next := ""
	if end < len(p.all) {
		next = strconv.Itoa(end)
	}
	p.pages++
	for _, t := range p.all[:i] {
		if !strings.Contains(p.out.String(), t.ID) {
			p.held = append(p.held, t.ID)
		}
	}
	return p.all[i:end], next, nil
}

// TestListTasksStreamsPages: warden tasks list prints page by page (it
// keeps one page, not every task), as lines or as one JSON array.
func TestListTasksStreamsPages(t *testing.T) {
	var out bytes.Buffer
	s := &pagedStore{out: &out}
	for i := range 5 {
		s.all = append(s.all, tasks.Task{ID: tasks.NewID(), Owner: "token", Tool: "t" + strconv.Itoa(i), Status: tasks.Completed,
			Created: time.Unix(int64(i), 0), TTL: time.Hour})
	}
	if err := listTasks(t.Context(), &out, s, "here", true); err != nil {
		t.Fatal(err)
	}
	if len(s.held) > 0 {
		t.Errorf("tasks not printed before the next page was asked for: %v", s.held)
	}
	var listed []tasks.Task
	if err := json.Unmarshal(out.Bytes(), &listed); err != nil || len(listed) != 5 || listed[4].Tool != "t4" || s.pages != 3 {
		t.Errorf("JSON over %d pages: %v, %d tasks:\n%s", s.pages, err, len(listed), out.String())
	}
	out.Reset()
	if err := listTasks(t.Context(), &out, s, "here", false); err != nil {
		t.Fatal(err)
	}
	if len(s.held) > 0 {
		t.Errorf("lines not printed before the next page was asked for: %v", s.held)
	}
	if lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"); len(lines) != 6 || !strings.HasPrefix(lines[0], "ID") || strings.Count(out.String(), "ID") != 1 {
		t.Errorf("lines over pages:\n%s", out.String())
	}
	out.Reset()
	if err := listTasks(t.Context(), &out, &pagedStore{out: &out}, "here", true); err != nil || out.String() != "[]\n" {
		t.Errorf("JSON of no tasks: %q, %v", out.String(), err)
	}
}
