package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/warden-run/warden/internal/backendurl"
	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/internal/pgmigrate"
)

// The PostgreSQL broker: one row per waiting question, shared by every
// replica that names the same database, so that a person deciding on
// replica B releases the call waiting on replica A. A Decide marks the row
// and sends a NOTIFY carrying its id; each broker LISTENs on one
// connection of its own and wakes its waiting Ask, which reads its row.
// Every waiting Ask also reads its row every Poll, so that a notification
// lost with a dropped LISTEN connection delays an answer but never loses
// it. Every statement uses the database's clock (now()), not the replicas'.
//
// It fails closed: a question that cannot be stored, or whose row cannot
// be read, ends its Ask with an error wrapping ErrUnavailable, which the
// call refuses on. Nothing is ever taken as approved unless the row says so.

// notifyChannel is the LISTEN/NOTIFY channel: the payload is the id of a
// decided question, or "" when only the pending set changed.
const notifyChannel = "warden_approvals"

// noDeadline is the deadline a Request without one is stored under, so
// that the row of a replica that dies mid-wait is still swept.
const noDeadline = 24 * time.Hour

// approvalsAdvisoryKey is the pg_advisory_xact_lock key that serializes
// this package's migrations and the bounded insert ("wardena1").
const approvalsAdvisoryKey int64 = 0x7761726465_6e6131

// migrations are the schema's versions, in order (append only), recorded
// in a table of their own so that this package and hostfuncs/memory, which
// may share a database, never number each other's versions.
var migrations = []string{
	`CREATE TABLE warden_approvals (
		id       text PRIMARY KEY,
		request  jsonb NOT NULL,
		created  timestamptz NOT NULL,
		deadline timestamptz NOT NULL,
		decision jsonb
	);
	CREATE INDEX warden_approvals_deadline ON warden_approvals (deadline)`,
}

// PostgresOptions configure a Postgres broker.
type PostgresOptions struct {
	// URL is the postgres:// URL of the database (backendurl.Check).
	URL string
	// Max bounds the questions waiting at once across every replica (0:
	// limits.DefaultApprovalsMaxPending).
	Max int
	// MaxPerPrincipal bounds the questions of one Request.Principal waiting
	// at once across every replica (0:
	// limits.DefaultApprovalsMaxPendingPerCaller).
	MaxPerPrincipal int
	// QueryTimeout bounds each statement (0: limits.DefaultPostgresQueryTimeout).
	QueryTimeout time.Duration
	// Poll is how often a waiting Ask reads its row without a
	// notification (0: limits.DefaultApprovalsPoll).
	Poll time.Duration
}

// Postgres is a Broker whose questions live in PostgreSQL.
type Postgres struct {
	pool    *pgxpool.Pool
	conn    *pgx.ConnConfig // for the LISTEN connection, outside the pool
	name    string          // backendurl.ID: no password
	max     int
	mine    int // PostgresOptions.MaxPerPrincipal
	timeout time.Duration
	poll    time.Duration
	// readFault, set by tests only, runs before each read of a waiting
	// question's row; an error it returns is taken as the read's.
	readFault func() error
	// commitFault, set by tests only, runs once an insert committed; an
	// error it returns is taken as the commit's, as when the call ends
	// (or the connection drops) while the commit's answer is on its way.
	commitFault func() error
	// finishFault, set by tests only, runs before each delete of a
	// question's row as its Ask returns (finish); an error it returns is
	// taken as the delete's.
	finishFault func() error

	mu      sync.Mutex
	waiters map[string]chan struct{} // this process's Asks, by id
	subscribers

	stop   context.CancelFunc
	done   chan struct{}
	closed sync.Once
}

// OpenPostgres connects to the database, brings its schema up to date and
// starts listening for decisions. Close releases it.
func OpenPostgres(ctx context.Context, o PostgresOptions) (*Postgres, error) {
	if err := backendurl.Check(o.URL); err != nil {
		return nil, fmt.Errorf("approvals backend: %w", err)
	}
	p := &Postgres{name: backendurl.ID(o.URL), max: o.Max, mine: o.MaxPerPrincipal, timeout: o.QueryTimeout, poll: o.Poll,
		waiters: map[string]chan struct{}{}}
	if p.max <= 0 {
		p.max = limits.DefaultApprovalsMaxPending
	}
	if p.mine <= 0 {
		p.mine = limits.DefaultApprovalsMaxPendingPerCaller
	}
	if p.timeout <= 0 {
		p.timeout = limits.DefaultPostgresQueryTimeout
	}
	if p.poll <= 0 {
		p.poll = limits.DefaultApprovalsPoll
	}
	pc, err := pgxpool.ParseConfig(o.URL) // pgconn redacts the password from its errors
	if err != nil {
		return nil, fmt.Errorf("approvals backend: %w", err)
	}
	pc.MaxConns, pc.MinConns = 4, 0
	if pc.ConnConfig.ConnectTimeout == 0 || pc.ConnConfig.ConnectTimeout > p.timeout {
		pc.ConnConfig.ConnectTimeout = p.timeout
	}
	// The server ends a statement that outlives the timeout, as the memory
	// backend's does (hostfuncs/memory).
	pc.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(p.timeout.Milliseconds(), 10)
	p.conn = pc.ConnConfig.Copy()
	mctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if p.pool, err = pgxpool.NewWithConfig(mctx, pc); err != nil {
		return nil, p.unavailable(err)
	}
	if err := p.migrate(mctx); err != nil {
		p.pool.Close()
		return nil, fmt.Errorf("%w: %s: migrate the schema: %v", ErrUnavailable, p.name, err)
	}
	lctx, stop := context.WithCancel(context.Background())
	p.stop, p.done = stop, make(chan struct{})
	go p.listen(lctx)
	return p, nil
}

// Name is the database, without its password: postgres://USER@HOST/DB.
func (p *Postgres) Name() string { return p.name }

// Close stops listening and closes the connections; Asks still waiting
// end with ErrUnavailable.
func (p *Postgres) Close() {
	p.closed.Do(func() {
		p.stop()
		<-p.done
		p.pool.Close()
	})
}

func (p *Postgres) migrate(ctx context.Context) error {
	return pgmigrate.Run(ctx, p.pool, pgmigrate.Schema{Table: "warden_approvals_migrations", Lock: approvalsAdvisoryKey, Steps: migrations})
}

// unavailable wraps a database failure: ErrUnavailable, the database
// named, pgx's words (which never hold the password).
func (p *Postgres) unavailable(err error) error {
	return fmt.Errorf("%w: %s: %v", ErrUnavailable, p.name, err)
}

// query runs f under the query timeout.
func (p *Postgres) query(ctx context.Context, f func(ctx context.Context) error) error {
	qctx, cancel := context.WithTimeout(ctx, p.timeout+2*time.Second)
	defer cancel()
	return f(qctx)
}

// Ask implements Broker.
func (p *Postgres) Ask(ctx context.Context, r Request) (Decision, error) {
	if r.ID == "" {
		r.ID = newID()
	}
	if r.Created.IsZero() {
		r.Created = time.Now()
	}
	deadline := r.Deadline
	if deadline.IsZero() {
		deadline = r.Created.Add(noDeadline)
	}
	body, err := json.Marshal(r)
	if err != nil {
		return Decision{}, fmt.Errorf("approvals: encode the question: %w", err)
	}
	// Listen before the row exists: a Decide right after the insert must
	// find someone to wake.
	wake := make(chan struct{}, 1)
	p.mu.Lock()
	p.waiters[r.ID] = wake
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.waiters, r.ID)
		p.mu.Unlock()
	}()
	if committing, err := p.insert(ctx, r, body, deadline); err != nil {
		if !committing {
			// Failed before the commit (refused under the lock, or the
			// database unreachable): no row can exist, and a delete would
			// only delay the refusal, or the fallback, by another timeout.
			return Decision{}, err
		}
		// The commit may have landed though its answer did not (the call
		// ended meanwhile, the connection dropped): the row must not
		// outlive its Ask, listed in every console until its deadline
		// with nobody waiting on it. finish removes it, and returns a
		// decision taken in that instant rather than throw it away.
		d, removed, err := p.finish(ctx, r.ID, err)
		if err != nil && !removed {
			// The row may be stored, and its delete failed: it may be
			// listed and decided on another replica, so the question
			// must not be asked again elsewhere (a Fallback would, and
			// could overturn a denial there).
			return d, askedError{err}
		}
		return d, err
	}
	// From here on the question is shared: another replica may answer it,
	// so every failure is marked asked (a Fallback never asks it again
	// elsewhere), and finish returns a decision it finds whatever failed.
	d, err := p.wait(ctx, r.ID, deadline, wake)
	if err != nil {
		return d, askedError{err}
	}
	return d, nil
}

// askedError marks a failure of an Ask whose question was stored, and so
// may have been seen and answered on another replica: falling back to
// another broker would ask the same question twice (and could overturn a
// denial). Its text is the failure's.
type askedError struct{ error }

func (e askedError) Unwrap() error { return e.error }

// wait waits for the decision on the stored question id (wake: its
// notifications).
func (p *Postgres) wait(ctx context.Context, id string, deadline time.Time, wake <-chan struct{}) (Decision, error) {
	expired := time.NewTimer(time.Until(deadline))
	defer expired.Stop()
	tick := time.NewTicker(p.poll)
	defer tick.Stop()
	for {
		select {
		case <-wake:
		case <-tick.C:
		case <-expired.C:
			return p.finished(ctx, id, ErrExpired)
		case <-ctx.Done():
			return p.finished(ctx, id, ctx.Err())
		}
		d, decided, err := p.read(ctx, id)
		switch {
		case err != nil && ctx.Err() != nil:
			return p.finished(ctx, id, ctx.Err())
		case err != nil:
			// Fail closed: without the row, no answer can be trusted,
			// unless the delete finds one (finish).
			return p.finished(ctx, id, err)
		case decided:
			p.finish(ctx, id, nil)
			return d, nil
		}
	}
}

// insert stores the question, refusing it when max are waiting across
// every replica, or mine of its principal: the counts and the insert run
// under one advisory lock, so replicas asking at once cannot both take the
// last place. Rows left by a
// replica that died mid-wait are swept first, a minute past their deadline: the Ask that owns a row
// removes it as it returns, so only a replica that died mid-wait leaves one.
//
// committing reports whether the commit was attempted: only then may a row
// be stored though err says it failed.
func (p *Postgres) insert(ctx context.Context, r Request, body []byte, deadline time.Time) (committing bool, err error) {
	err = p.query(ctx, func(ctx context.Context) error {
		tx, err := p.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		if err != nil {
			return err
		}
		defer tx.Rollback(context.Background())
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, approvalsAdvisoryKey); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM warden_approvals WHERE deadline < now() - interval '1 minute'`); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM warden_approvals WHERE decision IS NULL AND deadline > now()`).Scan(&n); err != nil {
			return err
		}
		if n >= p.max {
			return ErrTooMany
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM warden_approvals
			WHERE decision IS NULL AND deadline > now() AND request->>'principal' = $1`, r.Principal).Scan(&n); err != nil {
			return err
		}
		if n >= p.mine {
			return ErrTooManyOfCaller
		}
		if _, err := tx.Exec(ctx, `INSERT INTO warden_approvals (id, request, created, deadline) VALUES ($1, $2, $3, $4)`,
			r.ID, body, r.Created, deadline); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, notifyChannel); err != nil {
			return err
		}
		committing = true
		if err := tx.Commit(ctx); err != nil || p.commitFault == nil {
			return err
		}
		return p.commitFault()
	})
	switch {
	case err == nil, errors.Is(err, ErrTooMany), errors.Is(err, ErrTooManyOfCaller):
		return committing, err
	case ctx.Err() != nil:
		return committing, ctx.Err()
	}
	return committing, p.unavailable(err)
}

// read returns the decision on question id, if taken.
func (p *Postgres) read(ctx context.Context, id string) (d Decision, decided bool, err error) {
	var raw []byte
	err = p.query(ctx, func(ctx context.Context) error {
		if p.readFault != nil {
			if err := p.readFault(); err != nil {
				return err
			}
		}
		return p.pool.QueryRow(ctx, `SELECT decision FROM warden_approvals WHERE id = $1`, id).Scan(&raw)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// Only this Ask removes its row before its deadline: gone means the
		// database lost it (restored, truncated), never an answer.
		return Decision{}, false, p.unavailable(errors.New("the question's row is gone"))
	case err != nil:
		return Decision{}, false, p.unavailable(err)
	case raw == nil:
		return Decision{}, false, nil
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return Decision{}, false, p.unavailable(fmt.Errorf("the decision does not decode: %v", err))
	}
	return d, true, nil
}

// finish removes the row of question id as its Ask returns with err, and
// returns the decision instead when one landed first, whatever err is (a
// failed read included): the delete and the read are one statement, so a
// Decide either wrote before it (and its decision is returned here) or
// finds no row (ErrNotFound). Throwing a decision away would let the
// question be asked again and a denial be overturned. removed reports
// whether the delete ran: the row is gone, or never was.
func (p *Postgres) finish(ctx context.Context, id string, err error) (d Decision, removed bool, _ error) {
	var raw []byte
	qerr := p.query(context.WithoutCancel(ctx), func(ctx context.Context) error {
		if p.finishFault != nil {
			if err := p.finishFault(); err != nil {
				return err
			}
		}
		return p.pool.QueryRow(ctx, `WITH d AS (DELETE FROM warden_approvals WHERE id = $1 RETURNING decision)
			SELECT (SELECT decision FROM d), pg_notify($2, '')`, id, notifyChannel).Scan(&raw, nil)
	})
	if qerr == nil && raw != nil && err != nil {
		if json.Unmarshal(raw, &d) == nil {
			return d, true, nil
		}
	}
	return Decision{}, qerr == nil, err
}

// finished is finish for a question that was stored (wait): Ask marks
// every failure asked whether or not the delete ran.
func (p *Postgres) finished(ctx context.Context, id string, err error) (Decision, error) {
	d, _, err := p.finish(ctx, id, err)
	return d, err
}

// Pending implements Broker.
func (p *Postgres) Pending(ctx context.Context) ([]Request, error) {
	var out []Request
	err := p.query(ctx, func(ctx context.Context) error {
		rows, err := p.pool.Query(ctx, `SELECT request FROM warden_approvals
			WHERE decision IS NULL AND deadline > now() ORDER BY created, id LIMIT $1`, p.max)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var raw []byte
			if err := rows.Scan(&raw); err != nil {
				return err
			}
			var r Request
			if err := json.Unmarshal(raw, &r); err != nil {
				return fmt.Errorf("a question does not decode: %w", err)
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, p.unavailable(err)
	}
	return out, nil
}

// Decide implements Broker.
func (p *Postgres) Decide(ctx context.Context, id string, d Decision, groups []string) error {
	if d.At.IsZero() {
		d.At = time.Now()
	}
	body, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("approvals: encode the decision: %w", err)
	}
	err = p.query(ctx, func(ctx context.Context) error {
		tx, err := p.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		if err != nil {
			return err
		}
		defer tx.Rollback(context.Background())
		var raw []byte
		err = tx.QueryRow(ctx, `SELECT request FROM warden_approvals
			WHERE id = $1 AND decision IS NULL AND deadline > now() FOR UPDATE`, id).Scan(&raw)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		var r Request
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("the question does not decode: %w", err)
		}
		if !MayDecide(r, d.By, groups) {
			return ErrNotYours
		}
		if _, err := tx.Exec(ctx, `UPDATE warden_approvals SET decision = $2 WHERE id = $1`, id, body); err != nil {
			return err
		}
		// Delivered at commit, to every replica's listener.
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, id); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	switch {
	case err == nil, errors.Is(err, ErrNotFound), errors.Is(err, ErrNotYours):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return p.unavailable(err)
}

// listen holds one connection LISTENing for decisions and changes until
// ctx ends, reconnecting every poll interval while the database is away;
// after each (re)connection it wakes everyone, for what it may have missed.
func (p *Postgres) listen(ctx context.Context) {
	defer close(p.done)
	for ctx.Err() == nil {
		p.listenOnce(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(p.poll):
		}
	}
}

func (p *Postgres) listenOnce(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, p.timeout)
	conn, err := pgx.ConnectConfig(cctx, p.conn)
	cancel()
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return
	}
	p.wake("*")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return
		}
		p.wake(n.Payload)
	}
}

// wake tells the subscribers that the pending set changed and, when id
// names a question this process waits on, its Ask ("*": every Ask).
func (p *Postgres) wake(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify() // every replica's changes reach the pages, through the NOTIFY each insert, decision and removal sends
	if id == "*" {
		for _, ch := range p.waiters {
			signal(ch)
		}
	} else if ch, ok := p.waiters[id]; ok {
		signal(ch)
	}
}
