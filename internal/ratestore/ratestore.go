// Package ratestore keeps the MCP server's rate-limit token buckets in
// PostgreSQL (mcpserver.RateStore), so that every replica serving one
// database counts calls against the same buckets: a limit of ten calls a
// minute is ten across the replicas, not ten on each.
//
// Each Take is one statement: an INSERT ... ON CONFLICT DO UPDATE that
// refills the bucket for the time since its last take and takes a token
// when there is one, under the row's lock, so that concurrent takes from
// any number of replicas are serialized by the database (RATIONALE.md,
// "Shared rate limits").
package ratestore

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/warden-run/warden/internal/termsafe"
)

// Defaults of Open.
const (
	DefaultTimeout  = 5 * time.Second
	DefaultMaxConns = 4
	// sweepEvery is how many takes pass between two sweeps of full
	// buckets (rows that say nothing a new row would not).
	sweepEvery = 64
)

// advisoryKey serializes the creation of the table across replicas
// starting at once ("ward" "rate").
const advisoryKey int64 = 0x77617264_72617465

// schema is the buckets' table: tokens as of at, and full_at, when the
// bucket will be full again (a row past it can be dropped: a missing row
// is a full bucket). granted is the outcome of the row's latest take,
// which the take's RETURNING reads.
const schema = `CREATE TABLE IF NOT EXISTS warden_rate_buckets (
	key     text COLLATE "C" PRIMARY KEY,
	tokens  double precision NOT NULL,
	at      timestamptz NOT NULL,
	full_at timestamptz NOT NULL,
	granted boolean NOT NULL
);
CREATE INDEX IF NOT EXISTS warden_rate_buckets_full_at ON warden_rate_buckets (full_at)`

// refilled is the bucket's tokens now: its tokens plus rate ($2) for each
// second since at, at most burst ($3). The database's clock, one for all
// replicas; greatest(0, ...) for a take whose statement began before the
// row's latest update (now() is the statement's start).
const refilled = `least($3::float8, b.tokens + $2::float8 * greatest(0, extract(epoch FROM now() - b.at)))`

// take is the one statement of Take. A new bucket starts full, less the
// token taken.
const take = `INSERT INTO warden_rate_buckets AS b (key, tokens, at, full_at, granted)
VALUES ($1, $3::float8 - 1, now(), now() + make_interval(secs => 1 / $2::float8), true)
ON CONFLICT (key) DO UPDATE SET
	tokens  = CASE WHEN ` + refilled + ` >= 1 THEN ` + refilled + ` - 1 ELSE ` + refilled + ` END,
	granted = ` + refilled + ` >= 1,
	at      = greatest(b.at, now()),
	full_at = greatest(b.at, now()) + make_interval(secs => ($3::float8 - (CASE WHEN ` + refilled + ` >= 1 THEN ` + refilled + ` - 1 ELSE ` + refilled + ` END)) / $2::float8)
RETURNING granted, tokens`

// give puts back one token, up to burst.
const give = `UPDATE warden_rate_buckets AS b SET
	tokens  = least($3::float8, ` + refilled + ` + 1),
	at      = greatest(b.at, now()),
	full_at = greatest(b.at, now()) + make_interval(secs => ($3::float8 - least($3::float8, ` + refilled + ` + 1)) / $2::float8)
WHERE key = $1`

// sweep drops a bounded batch of full buckets; full_at is checked again
// on the row it deletes, so a bucket taken from meanwhile stays.
const sweep = `DELETE FROM warden_rate_buckets WHERE full_at < now() AND key IN
	(SELECT key FROM warden_rate_buckets WHERE full_at < now() LIMIT 100)`

// Store is a set of token buckets in one PostgreSQL database. It is safe
// for concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	name    string
	timeout time.Duration

	mu    sync.Mutex
	ready bool // the table exists

	takes atomic.Int64
}

// Open returns a Store of the database backend (a postgres:// URL) that
// bounds each statement by timeout (0: DefaultTimeout) and holds at most
// maxConns connections (0: DefaultMaxConns). It connects at the first
// Take: a database down at start refuses calls (or lets the caller count
// them itself) instead of keeping warden from starting.
func Open(backend string, timeout time.Duration, maxConns int) (*Store, error) {
	pc, err := pgxpool.ParseConfig(backend) // pgconn redacts the password from its errors
	if err != nil {
		return nil, fmt.Errorf("rate limits: memory.backend: %w", err)
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	pc.MaxConns = int32(maxConns)
	pc.MinConns = 0
	if pc.ConnConfig.ConnectTimeout == 0 || pc.ConnConfig.ConnectTimeout > timeout {
		pc.ConnConfig.ConnectTimeout = timeout
	}
	pc.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(timeout.Milliseconds(), 10)
	s := &Store{timeout: timeout, name: nameOf(pc)}
	if s.pool, err = pgxpool.NewWithConfig(context.Background(), pc); err != nil {
		return nil, fmt.Errorf("rate limits: %s: %w", s.name, err)
	}
	return s, nil
}

// nameOf names the database without its password:
// postgres://USER@HOST:PORT/DATABASE, escaped for a terminal.
func nameOf(pc *pgxpool.Config) string {
	c := pc.ConnConfig
	return termsafe.Line(fmt.Sprintf("postgres://%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database))
}

// Name implements mcpserver.RateStore.
func (s *Store) Name() string { return s.name }

// Close closes the connections.
func (s *Store) Close() { s.pool.Close() }

// prepare creates the table once; a failure is retried at the next take.
func (s *Store) prepare(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready {
		return nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, advisoryKey); err != nil {
		return fmt.Errorf("advisory lock: %w", err)
	}
	if _, err := tx.Exec(ctx, schema); err != nil {
		return fmt.Errorf("create warden_rate_buckets: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	s.ready = true
	return nil
}

// Take implements mcpserver.RateStore.
func (s *Store) Take(ctx context.Context, key string, rate float64, burst int) (ok bool, retry time.Duration, err error) {
	if rate <= 0 || burst < 1 {
		return false, 0, fmt.Errorf("rate limits: bucket %q: rate %v and burst %d must be positive", key, rate, burst)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.prepare(ctx); err != nil {
		return false, 0, fmt.Errorf("%s: %w", s.name, err)
	}
	if s.takes.Add(1)%sweepEvery == 0 {
		if _, err := s.pool.Exec(ctx, sweep); err != nil {
			return false, 0, fmt.Errorf("%s: sweep full buckets: %w", s.name, err)
		}
	}
	var tokens float64
	if err := s.pool.QueryRow(ctx, take, key, rate, float64(burst)).Scan(&ok, &tokens); err != nil {
		return false, 0, fmt.Errorf("%s: take a token: %w", s.name, err)
	}
	if ok {
		return true, 0, nil
	}
	return false, time.Duration((1 - tokens) / rate * float64(time.Second)), nil
}

// Give implements mcpserver.RateStore.
func (s *Store) Give(ctx context.Context, key string, rate float64, burst int) error {
	if rate <= 0 || burst < 1 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if _, err := s.pool.Exec(ctx, give, key, rate, float64(burst)); err != nil {
		return fmt.Errorf("%s: give a token back: %w", s.name, err)
	}
	return nil
}
