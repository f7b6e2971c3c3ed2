package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/warden-run/warden/internal/backendurl"
	"github.com/warden-run/warden/internal/pgmigrate"
)

// The PostgreSQL backend: one table, one row per topic, shared by every
// replica that names the same database. Each operation is one SQL statement,
// so atomicity comes from PostgreSQL itself: an append is an
// INSERT ... ON CONFLICT DO UPDATE that concatenates under the row lock the
// update takes, and checks the limit in the same statement.

// migrateTimeout bounds connecting and migrating the schema at start,
// waiting for another replica's migration included.
const migrateTimeout = time.Minute

// clientGrace is how much longer than the server's statement_timeout the
// client waits for an answer.
const clientGrace = 2 * time.Second

// advisoryKey is the pg_advisory_xact_lock key that serializes migrations
// of concurrently starting replicas ("wardenm1").
const advisoryKey int64 = 0x7761726465_6e6d31

// migrations are the schema's versions, in order; migrations[i] takes the
// schema from version i to i+1. Append only: a started database has run
// the earlier ones.
var migrations = []string{
	// topic is compared bytewise (COLLATE "C"), so ORDER BY topic is the
	// order the file store lists in (Go's strings.Compare) whatever the
	// database's locale, and prefix ranges use the primary key.
	`CREATE TABLE warden_memories (
		topic    text COLLATE "C" PRIMARY KEY,
		value    bytea NOT NULL,
		modified timestamptz NOT NULL
	)`,
	// Spent requestState nonces (mcpserver), so that replicas accept each
	// state once between them; rows past expires are forgotten.
	`CREATE TABLE warden_spent_states (
		nonce   text PRIMARY KEY,
		expires timestamptz NOT NULL
	);
	CREATE INDEX warden_spent_states_expires ON warden_spent_states (expires)`,
}

type pgBackend struct {
	pool    *pgxpool.Pool
	timeout time.Duration
	name    string // postgresID, for logs and reloads
}

// postgresID is a backend URL without its password or options
// (backendurl.ID).
func postgresID(raw string) string { return backendurl.ID(raw) }

// openPostgres connects to the database cfg.Backend names and brings its
// schema up to date.
func openPostgres(ctx context.Context, cfg Config) (*pgBackend, error) {
	name := postgresID(cfg.Backend)
	// pgconn redacts the password from its parse errors.
	pc, err := pgxpool.ParseConfig(cfg.Backend)
	if err != nil {
		return nil, fmt.Errorf("memory: config key memory.backend: %w", err)
	}
	p := &pgBackend{timeout: cfg.QueryTimeout, name: name}
	if p.timeout == 0 {
		p.timeout = DefaultQueryTimeout
	}
	pc.MaxConns = int32(cfg.MaxConns)
	if pc.MaxConns == 0 {
		pc.MaxConns = DefaultMaxConns
	}
	pc.MinConns = 0
	if pc.ConnConfig.ConnectTimeout == 0 || pc.ConnConfig.ConnectTimeout > p.timeout {
		pc.ConnConfig.ConnectTimeout = p.timeout
	}
	// The server ends a statement that outlives the timeout itself, so that
	// a write reported as timed out has been rolled back, not left running
	// to land later (closing the connection alone would leave it running
	// until it next wrote to the socket). The client's own bound (run) is a
	// little longer, for a server that does not answer at all.
	pc.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(p.timeout.Milliseconds(), 10)
	// A call cancelled mid-statement asks the server to cancel it too,
	// rather than only dropping the connection.
	pc.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, CancelRequestDelay: 0, DeadlineDelay: time.Second}
	}
	ctx, cancel := context.WithTimeout(ctx, migrateTimeout)
	defer cancel()
	if p.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return nil, fmt.Errorf("memory: %s: %w", name, err)
	}
	if err := p.migrate(ctx); err != nil {
		p.pool.Close()
		return nil, fmt.Errorf("memory: %s: migrate the schema: %w", name, err)
	}
	return p, nil
}

// migrate brings the memory tables up to date (see pgmigrate.Run).
func (p *pgBackend) migrate(ctx context.Context) error {
	return pgmigrate.Run(ctx, p.pool, pgmigrate.Schema{Table: "warden_schema_migrations", Lock: advisoryKey, Steps: migrations})
}

func (p *pgBackend) id() string { return p.name }

func (p *pgBackend) close() { p.pool.Close() }

func (p *pgBackend) redact(msg string) string { return msg }

// run runs one operation under the backend's query timeout and names the
// way it ended: the call's own end (cancelled, or its deadline) is told
// apart from the query timeout.
func (p *pgBackend) run(ctx context.Context, what string, f func(ctx context.Context) error) error {
	qctx, cancel := context.WithTimeout(ctx, p.timeout+clientGrace)
	defer cancel()
	err := f(qctx)
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case qctx.Err() != nil, errors.As(err, &pgErr) && pgErr.Code == "57014": // query_canceled: statement_timeout
		return errQueryTimeout{after: p.timeout}
	case errors.Is(err, fs.ErrNotExist):
		return err
	}
	return fmt.Errorf("postgres %s: %w", what, err)
}

func (p *pgBackend) get(ctx context.Context, topic string, limit int) (value []byte, truncated bool, modified time.Time, err error) {
	var size int
	err = p.run(ctx, "get", func(ctx context.Context) error {
		err := p.pool.QueryRow(ctx,
			`SELECT substring(value FROM 1 FOR $2), octet_length(value), modified FROM warden_memories WHERE topic = $1`,
			topic, limit).Scan(&value, &size, &modified)
		if errors.Is(err, pgx.ErrNoRows) {
			return fs.ErrNotExist
		}
		return err
	})
	if err != nil {
		return nil, false, time.Time{}, err
	}
	if value == nil {
		value = []byte{}
	}
	return value, size > limit, modified, nil
}

func (p *pgBackend) put(ctx context.Context, topic string, value []byte, appending bool, limit int) (int, error) {
	if !appending {
		var size int
		err := p.run(ctx, "set", func(ctx context.Context) error {
			return p.pool.QueryRow(ctx, `INSERT INTO warden_memories (topic, value, modified) VALUES ($1, $2, clock_timestamp())
				ON CONFLICT (topic) DO UPDATE SET value = excluded.value, modified = excluded.modified
				RETURNING octet_length(value)`, topic, value).Scan(&size)
		})
		return size, err
	}
	// The conflict arm runs with the row locked, so concurrent appends
	// (from any replica) each see the value the previous one left; the
	// WHERE refuses one that would pass the limit, returning no row.
	var size int
	err := p.run(ctx, "append", func(ctx context.Context) error {
		err := p.pool.QueryRow(ctx, `INSERT INTO warden_memories AS m (topic, value, modified) VALUES ($1, $2, clock_timestamp())
			ON CONFLICT (topic) DO UPDATE SET value = m.value || excluded.value, modified = excluded.modified
				WHERE octet_length(m.value) + octet_length(excluded.value) <= $3
			RETURNING octet_length(m.value)`, topic, value, limit).Scan(&size)
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		// Refused: read the size only to say by how much.
		var current int
		if err := p.pool.QueryRow(ctx, `SELECT octet_length(value) FROM warden_memories WHERE topic = $1`, topic).Scan(&current); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return errTooLarge{size: current + len(value), limit: limit}
	})
	var tooLarge errTooLarge
	if errors.As(err, &tooLarge) {
		return 0, tooLarge
	}
	return size, err
}

func (p *pgBackend) remove(ctx context.Context, topic string) (bool, error) {
	var deleted bool
	err := p.run(ctx, "delete", func(ctx context.Context) error {
		tag, err := p.pool.Exec(ctx, `DELETE FROM warden_memories WHERE topic = $1`, topic)
		deleted = tag.RowsAffected() > 0
		return err
	})
	return deleted, err
}

func (p *pgBackend) list(ctx context.Context, prefix string, filter func(topic string) verdict) (entries []Entry, truncated bool, skipped Skipped, err error) {
	entries = []Entry{}
	err = p.run(ctx, "list", func(ctx context.Context) error {
		// Topics within prefix are prefix itself and those starting
		// "prefix/": with bytewise collation, the range [prefix/, prefix0)
		// ('0' follows '/'), which the primary key serves.
		rows, err := p.pool.Query(ctx, `SELECT topic, octet_length(value), modified FROM warden_memories
			WHERE $1 = '' OR topic = $1 OR (topic >= $1 || '/' AND topic < $1 || '0')
			ORDER BY topic`, prefix)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e Entry
			if err := rows.Scan(&e.Topic, &e.Size, &e.Modified); err != nil {
				return err
			}
			switch filter(e.Topic) {
			case hide:
				continue
			case denied:
				skipped.Denied++
				continue
			}
			if len(entries) == maxListed {
				truncated = true
				return nil // rows.Close stops the query
			}
			e.Modified = e.Modified.UTC()
			entries = append(entries, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, false, Skipped{}, err
	}
	return entries, truncated, skipped, nil
}

// spend records a requestState nonce as spent; see Memory.SpentStates.
func (p *pgBackend) spend(ctx context.Context, nonce string, expires time.Time) (fresh bool, err error) {
	err = p.run(ctx, "spend requestState", func(ctx context.Context) error {
		// Forget a bounded batch of expired nonces on each spend, so the
		// table holds about the live ones without a background job.
		if _, err := p.pool.Exec(ctx, `DELETE FROM warden_spent_states WHERE nonce IN
			(SELECT nonce FROM warden_spent_states WHERE expires < now() LIMIT 100)`); err != nil {
			return err
		}
		tag, err := p.pool.Exec(ctx, `INSERT INTO warden_spent_states (nonce, expires) VALUES ($1, $2)
			ON CONFLICT (nonce) DO NOTHING`, nonce, expires)
		fresh = tag.RowsAffected() == 1
		return err
	})
	return fresh, err
}
