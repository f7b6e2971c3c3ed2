package app

import (
	"context"
	"time"

	"github.com/warden-run/warden/internal/ratestore"
	"github.com/warden-run/warden/mcpserver"
)

// rateStore returns where the server keeps its rate-limit buckets
// (mcpserver.Options.RateStore): the memory store's PostgreSQL database
// when memory.backend is one (as at start), so that replicas share them;
// nil, this process's own buckets, on the file backend. The store
// connects at the first call, and is closed with the app.
func (a *App) rateStore() mcpserver.RateStore {
	cfg := a.Config()
	if cfg.Memory.Backend == "" || cfg.Memory.Backend == "file" {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rates == nil {
		s, err := ratestore.Open(cfg.Memory.Backend, cfg.Memory.Postgres.QueryTimeout, 0)
		if err != nil {
			// The memory capability opened the same URL at start, so
			// this does not happen; if it did, calls are refused
			// rather than counted per replica.
			a.log.Error("rate limits: cannot use the PostgreSQL backend", "error", err)
			return failedStore{err: err}
		}
		a.rates = s
	}
	return a.rates
}

// failedStore is a RateStore that could not be opened: every take fails,
// so that server.rate_limit.on_backend_error decides.
type failedStore struct{ err error }

func (f failedStore) Take(context.Context, string, float64, int) (bool, time.Duration, error) {
	return false, 0, f.err
}
func (f failedStore) Give(context.Context, string, float64, int) error { return f.err }
func (f failedStore) Name() string                                     { return "the PostgreSQL backend (memory.backend)" }
