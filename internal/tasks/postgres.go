package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/internal/pgmigrate"
)

// The PostgreSQL store: one table, one row per task, shared by every
// replica naming the same database. A change that reads before it writes
// (Update) holds the row's lock (SELECT ... FOR UPDATE) from the read to
// the commit; the others are single conditional statements, which
// PostgreSQL re-checks against the row as committed, so that two replicas
// never both end one task: a Sweep that finds a row another replica just
// ended skips it. Create takes a transaction-scoped advisory lock, so that
// replicas creating at once count each other's tasks against Bounds.
//
// Both transactions are READ COMMITTED whatever the database's
// default_transaction_isolation (readCommitted): Create's count must see
// the rows committed while it waited for the advisory lock, which a
// REPEATABLE READ snapshot, taken at the lock's statement, would not; and
// Update's row lock must wait for a concurrent Update and then see its
// row, where REPEATABLE READ fails it ("could not serialize access").

// pgSchema is the store's tables. Its versions are recorded apart from the
// memory store's (warden_schema_migrations), which may share the database.
var pgSchema = pgmigrate.Schema{
	Table: "warden_task_migrations",
	Lock:  0x7761726465_6e7431, // "wardent1"
	Steps: []string{
		// id and owner compare bytewise (COLLATE "C"), so ORDER BY is the
		// order the file store lists in, whatever the database's locale.
		`CREATE TABLE warden_tasks (
			id               text COLLATE "C" PRIMARY KEY,
			owner            text COLLATE "C" NOT NULL,
			tool             text NOT NULL,
			status           text NOT NULL,
			status_message   text NOT NULL,
			created          timestamptz NOT NULL,
			updated          timestamptz NOT NULL,
			ttl              bigint NOT NULL,
			expires          timestamptz NOT NULL,
			poll_interval    bigint NOT NULL,
			result           bytea,
			replica          text NOT NULL,
			lease_until      timestamptz,
			cancel_requested boolean NOT NULL
		);
		CREATE INDEX warden_tasks_owner ON warden_tasks (owner, created, id);
		CREATE INDEX warden_tasks_listed ON warden_tasks (created, id);
		CREATE INDEX warden_tasks_expires ON warden_tasks (expires);
		CREATE INDEX warden_tasks_unfinished ON warden_tasks (lease_until) WHERE status IN ('working', 'input_required')`,
		// A task's outstanding input (input_required): its requests and
		// the answers received, each JSON (the rules bound them).
		`ALTER TABLE warden_tasks ADD COLUMN input_requests bytea, ADD COLUMN input_responses bytea`,
	},
}

// readCommitted is the isolation of every transaction of the store.
var readCommitted = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}

// createLock is the advisory lock Create holds while it counts and inserts.
const createLock int64 = 0x7761726465_6e7463 // "wardentc"

// unfinished is the SQL condition of a task that has not ended.
const unfinished = `status IN ('working', 'input_required')`

// pgColumns are a task's columns in the order scanTask reads them. Of a
// result no more is read than a result may be (limits.MaxTaskResult), one
// byte past it telling scanTask the row was written past the store.
var pgColumns = `id, owner, tool, status, status_message, created, updated, ttl, poll_interval, substring(result FROM 1 FOR ` +
	strconv.Itoa(limits.MaxTaskResult+1) + `), replica, lease_until, cancel_requested, input_requests, input_responses`

// pgInsertColumns are the columns Create writes, in pgColumns' order.
const pgInsertColumns = `id, owner, tool, status, status_message, created, updated, ttl, poll_interval, result, replica, lease_until, cancel_requested`

// A created task has no input: Create leaves input_requests and
// input_responses NULL.

// listColumns are pgColumns for a List page, which carries no results
// (tasks/list has none; a Get returns one): a page of 1000 tasks never
// reads their results, up to tasks.max_result each.
const listColumns = `id, owner, tool, status, status_message, created, updated, ttl, poll_interval, NULL::bytea, replica, lease_until, cancel_requested, input_requests, input_responses`

// taskRow is the SQL condition of a row scanTask accepts (but for the
// size of its result, which a List does not read): a List filters the
// others out in the query, so that a page and its cursor count task rows
// only.
const taskRow = `id ~ '^[0-9a-f]{32}$' AND status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')`

// errBadRow is a row that is not a task record: its id is not one NewID
// makes, its status is none a task has, or its result is larger than any
// a task keeps. Only a write past the store
// makes one; its content is never shown (an id with a terminal escape).
var errBadRow = errors.New("a row of warden_tasks is not a task record")

// PostgresOptions bound the PostgreSQL store's connections.
type PostgresOptions struct {
	// MaxConns bounds the connection pool (memory.postgres.max_conns).
	MaxConns int
	// QueryTimeout bounds one statement (memory.postgres.query_timeout).
	QueryTimeout time.Duration
	// Now is the clock of Created and Updated stamps; nil is time.Now.
	Now func() time.Time
}

// PGStore is the Store of one PostgreSQL database.
type PGStore struct {
	pool    *pgxpool.Pool
	now     func() time.Time
	timeout time.Duration
}

// OpenPostgres connects to the database url names (a postgres:// URL that
// passed backendurl.Check) and brings the task tables up to date.
func OpenPostgres(ctx context.Context, url string, o PostgresOptions) (*PGStore, error) {
	// pgconn redacts the password from its parse errors.
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("tasks: %w", err)
	}
	s := &PGStore{now: o.Now, timeout: o.QueryTimeout}
	if s.now == nil {
		s.now = time.Now
	}
	if s.timeout <= 0 {
		s.timeout = 5 * time.Second
	}
	pc.MaxConns = int32(max(o.MaxConns, 1))
	if o.MaxConns == 0 {
		pc.MaxConns = 8
	}
	pc.MinConns = 0
	if pc.ConnConfig.ConnectTimeout == 0 || pc.ConnConfig.ConnectTimeout > s.timeout {
		pc.ConnConfig.ConnectTimeout = s.timeout
	}
	// As the memory store does: the server ends a statement that outlives
	// the timeout, so a write reported as failed was rolled back, and a
	// cancelled call cancels its statement on the server too.
	pc.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(s.timeout.Milliseconds(), 10)
	pc.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, CancelRequestDelay: 0, DeadlineDelay: time.Second}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if s.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return nil, fmt.Errorf("tasks: postgres: %w", err)
	}
	if err := pgmigrate.Run(ctx, s.pool, pgSchema); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("tasks: postgres: migrate the schema: %w", err)
	}
	return s, nil
}

// bound is ctx under the store's query timeout, with a little grace for
// the server's own statement_timeout to answer first.
func (s *PGStore) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout+2*time.Second)
}

// wrap names a database error; the store's own errors pass as they are.
func wrap(what string, err error) error {
	switch {
	case err == nil, errors.Is(err, ErrNotFound), errors.Is(err, ErrTerminal), errors.Is(err, ErrTooMany),
		errors.Is(err, ErrResultTooLarge), errors.Is(err, ErrInput), errors.Is(err, ErrBadCursor), errors.Is(err, ErrBadID),
		errors.As(err, new(*invalidError)):
		return err
	}
	return fmt.Errorf("tasks: postgres %s: %w", what, err)
}

// nullTime is t for a nullable column: NULL when zero.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// scanTask reads one row of pgColumns.
func scanTask(row pgx.Row) (Task, error) {
	var t Task
	var status string
	var ttl, poll int64
	var lease *time.Time
	var result, inReqs, inResps []byte
	err := row.Scan(&t.ID, &t.Owner, &t.Tool, &status, &t.StatusMessage, &t.Created, &t.Updated, &ttl, &poll, &result, &t.Replica, &lease, &t.CancelRequested, &inReqs, &inResps)
	if errors.Is(err, pgx.ErrNoRows) {
		return Task{}, ErrNotFound
	}
	if err != nil {
		return Task{}, err
	}
	if _, err := ParseID(t.ID); err != nil || !validStatus(Status(status)) || len(result) > limits.MaxTaskResult {
		return Task{}, errBadRow
	}
	t.Status, t.TTL, t.PollInterval = Status(status), time.Duration(ttl), time.Duration(poll)
	t.Created, t.Updated = stamp(t.Created), stamp(t.Updated)
	if lease != nil {
		t.LeaseUntil = stamp(*lease)
	}
	if len(result) > 0 {
		t.Result = result
	}
	if t.Status == InputRequired {
		if len(inReqs) > 0 && json.Unmarshal(inReqs, &t.InputRequests) != nil ||
			len(inResps) > 0 && json.Unmarshal(inResps, &t.InputResponses) != nil {
			return Task{}, errBadRow
		}
	}
	return t, nil
}

// inputColumns are t's input as the store keeps it: NULL when it has none.
func inputColumns(t *Task) (reqs, resps []byte, err error) {
	if len(t.InputRequests) > 0 {
		if reqs, err = json.Marshal(t.InputRequests); err != nil {
			return nil, nil, err
		}
	}
	if len(t.InputResponses) > 0 {
		if resps, err = json.Marshal(t.InputResponses); err != nil {
			return nil, nil, err
		}
	}
	return reqs, resps, nil
}

// Create implements Store.
func (s *PGStore) Create(ctx context.Context, t Task, b Bounds) error {
	t, err := prepareCreate(t, s.now(), b)
	if err != nil {
		return err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	err = pgx.BeginTxFunc(ctx, s.pool, readCommitted, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, createLock); err != nil {
			return err
		}
		// Every row is counted: the rows are bounded by b.Records.
		var c counts
		if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE owner = $1 AND `+unfinished+`), count(*) FILTER (WHERE `+unfinished+`),
			count(*) FILTER (WHERE owner = $1), count(*) FROM warden_tasks`, t.Owner).Scan(&c.mine, &c.total, &c.mineRecords, &c.totalRecords); err != nil {
			return err
		}
		if err := checkCount(c, b); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO warden_tasks (`+pgInsertColumns+`, expires)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (id) DO NOTHING`,
			t.ID, t.Owner, t.Tool, string(t.Status), t.StatusMessage, t.Created, t.Updated, int64(t.TTL), int64(t.PollInterval),
			[]byte(t.Result), t.Replica, nullTime(t.LeaseUntil), t.CancelRequested, t.Expires())
		if err == nil && tag.RowsAffected() == 0 {
			err = fmt.Errorf("tasks: create task %s: the id is taken", t.ID)
		}
		return err
	})
	return wrap("create", err)
}

// get reads task id, of owner unless anyOwner, locking its row in tx when
// forUpdate.
func (s *PGStore) get(ctx context.Context, q pgx.Tx, owner, id string, anyOwner, forUpdate bool) (Task, error) {
	// An owner that is not text owns nothing (Create refuses it), and
	// PostgreSQL would refuse the query.
	if _, err := ParseID(id); err != nil || !textField(owner) {
		return Task{}, ErrNotFound
	}
	query := `SELECT ` + pgColumns + ` FROM warden_tasks WHERE id = $1 AND (owner = $2 OR $3)`
	if forUpdate {
		query += ` FOR UPDATE`
	}
	if q != nil {
		return scanTask(q.QueryRow(ctx, query, id, owner, anyOwner))
	}
	return scanTask(s.pool.QueryRow(ctx, query, id, owner, anyOwner))
}

// Get implements Store.
func (s *PGStore) Get(ctx context.Context, owner, id string) (Task, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	t, err := s.get(ctx, nil, owner, id, false, false)
	return t, wrap("get", err)
}

// GetAny implements Operator.
func (s *PGStore) GetAny(ctx context.Context, id string) (Task, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	t, err := s.get(ctx, nil, "", id, true, false)
	return t, wrap("get", err)
}

// List implements Store.
func (s *PGStore) List(ctx context.Context, owner, cursor string, limit int) ([]Task, string, error) {
	return s.list(ctx, owner, false, cursor, limit)
}

// ListAll implements Operator.
func (s *PGStore) ListAll(ctx context.Context, cursor string, limit int) ([]Task, string, error) {
	return s.list(ctx, "", true, cursor, limit)
}

func (s *PGStore) list(ctx context.Context, owner string, anyOwner bool, cursor string, limit int) ([]Task, string, error) {
	limit = pageLimit(limit)
	var from position
	if cursor != "" {
		var err error
		if from, err = parseCursor(cursor); err != nil {
			return nil, "", err
		}
	}
	if !anyOwner && !listable(owner) {
		return nil, "", nil
	}
	query, args := listQuery(anyOwner, cursor != ""), []any{limit + 1}
	if !anyOwner {
		args = append(args, owner)
	}
	if cursor != "" {
		args = append(args, from.created, from.id)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, "", wrap("list", err)
	}
	var page []Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil { // errBadRow too: taskRow and scanTask disagree
			rows.Close()
			return nil, "", wrap("list", err)
		}
		page = append(page, t)
	}
	if err := rows.Err(); err != nil {
		return nil, "", wrap("list", err)
	}
	next := ""
	if len(page) > limit {
		page = page[:limit]
		next = encodeCursor(&page[limit-1])
	}
	return page, next, nil
}

// listQuery is the query of a List page: $1 the limit, then the owner
// (unless anyOwner), then the cursor's time and id (when after). Rows
// written past the store (by hand, or by a later warden) that are no task
// records are left out (taskRow). The
// owner's query and the operator's are apart: one with "owner = $2 OR
// <all>" would not use the (owner, created, id) index under a generic
// plan, which cannot know that the OR is false.
func listQuery(anyOwner, after bool) string {
	where, n := []string{taskRow}, 2
	if !anyOwner {
		where = append(where, "owner = $2")
		n++
	}
	if after {
		where = append(where, fmt.Sprintf("(created, id) > ($%d, $%d)", n, n+1))
	}
	return `SELECT ` + listColumns + ` FROM warden_tasks WHERE ` + strings.Join(where, " AND ") + ` ORDER BY created, id LIMIT $1`
}

// Update implements Store.
func (s *PGStore) Update(ctx context.Context, owner, id string, b Bounds, change func(*Task)) (Task, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var out Task
	err := pgx.BeginTxFunc(ctx, s.pool, readCommitted, func(tx pgx.Tx) error {
		old, err := s.get(ctx, tx, owner, id, false, true)
		if err != nil {
			return err
		}
		t, err := applyUpdate(old, s.now(), b, change)
		out = t
		if err != nil {
			return err
		}
		reqs, resps, err := inputColumns(&t)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE warden_tasks SET status = $2, status_message = $3, updated = $4, ttl = $5, expires = $6,
			poll_interval = $7, result = $8, replica = $9, lease_until = $10, cancel_requested = $11,
			input_requests = $12, input_responses = $13 WHERE id = $1`,
			t.ID, string(t.Status), t.StatusMessage, t.Updated, int64(t.TTL), t.Expires(), int64(t.PollInterval),
			[]byte(t.Result), t.Replica, nullTime(t.LeaseUntil), t.CancelRequested, reqs, resps)
		return err
	})
	return out, wrap("update", err)
}

// Cancel implements Store.
func (s *PGStore) Cancel(ctx context.Context, owner, id string) (Task, error) {
	return s.cancel(ctx, owner, id, false)
}

// CancelAny implements Operator.
func (s *PGStore) CancelAny(ctx context.Context, id string) (Task, error) {
	return s.cancel(ctx, "", id, true)
}

func (s *PGStore) cancel(ctx context.Context, owner, id string, anyOwner bool) (Task, error) {
	if _, err := ParseID(id); err != nil || !textField(owner) {
		return Task{}, ErrNotFound
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	t, err := scanTask(s.pool.QueryRow(ctx, `UPDATE warden_tasks SET cancel_requested = true, updated = $4
		WHERE id = $1 AND (owner = $2 OR $3) AND `+unfinished+` AND NOT cancel_requested RETURNING `+pgColumns,
		id, owner, anyOwner, stamp(s.now())))
	if !errors.Is(err, ErrNotFound) {
		return t, wrap("cancel", err)
	}
	// Unchanged: unknown, ended, or asked to cancel already.
	if t, err = s.get(ctx, nil, owner, id, anyOwner, false); err != nil {
		return t, wrap("cancel", err)
	}
	if t.Status.Terminal() {
		return t, ErrTerminal
	}
	return t, nil
}

// Renew implements Store; it stops what FileStore.Renew stops.
func (s *PGStore) Renew(ctx context.Context, replica string, ids []string, until time.Time) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if !textField(replica) {
		return slices.Clone(ids), nil // no task runs on it: Create and Update refuse the name
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `UPDATE warden_tasks SET lease_until = $3
		WHERE id = ANY($2) AND replica = $1 AND `+unfinished+` RETURNING id, cancel_requested`,
		replica, ids, stamp(until))
	if err != nil {
		return nil, wrap("renew", err)
	}
	renewed := map[string]bool{} // id: cancel requested
	var id string
	var cancelled bool
	if _, err := pgx.ForEachRow(rows, []any{&id, &cancelled}, func() error {
		renewed[id] = cancelled
		return nil
	}); err != nil {
		return nil, wrap("renew", err)
	}
	var stop []string
	for _, id := range ids {
		if cancelled, ok := renewed[id]; !ok || cancelled {
			stop = append(stop, id)
		}
	}
	return slices.Clip(stop), nil
}

// Sweep implements Store. Each statement is atomic, and a row another
// replica's sweep changed first is re-checked against its new values, so
// replicas sweeping at once count each task once between them.
func (s *PGStore) Sweep(ctx context.Context, now time.Time) (failed, removed int, err error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	now = stamp(now)
	tag, err := s.pool.Exec(ctx, `UPDATE warden_tasks SET status = 'failed', status_message = $2, updated = $1,
		input_requests = NULL, input_responses = NULL WHERE `+unfinished+` AND lease_until < $1`, now, LeaseLapsed)
	if err != nil {
		return 0, 0, wrap("sweep", err)
	}
	failed = int(tag.RowsAffected())
	if tag, err = s.pool.Exec(ctx, `DELETE FROM warden_tasks WHERE expires < $1 AND NOT (`+unfinished+` AND lease_until IS NOT NULL)`, now); err != nil {
		return failed, 0, wrap("sweep", err)
	}
	return failed, int(tag.RowsAffected()), nil
}

// Close implements Store.
func (s *PGStore) Close() error {
	s.pool.Close()
	return nil
}

var (
	_ Store    = (*PGStore)(nil)
	_ Operator = (*PGStore)(nil)
)
