package approvals

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
)

// Fallback is a Broker that asks Shared (a PostgreSQL broker every replica
// reads) and, when Shared is unavailable and UseLocal says so
// (approvals.on_backend_error: local), Local: the question then waits on
// this process only, answerable in this process's console, until the same
// deadline. Pending and Subscribe cover both; Decide finds the question
// where it waits. Without UseLocal, a Shared failure refuses (fails closed).
type Fallback struct {
	Shared, Local Broker
	// UseLocal reports, at each Ask, whether a Shared failure falls back
	// to Local rather than refusing (read from the config in force).
	UseLocal func() bool
}

// Ask implements Broker. It falls back only when Shared could not store
// the question: once stored, another replica may have shown it and taken
// a decision, so a later failure refuses rather than ask again here.
func (f *Fallback) Ask(ctx context.Context, r Request) (Decision, error) {
	d, err := f.Shared.Ask(ctx, r)
	var asked askedError
	if errors.Is(err, ErrUnavailable) && !errors.As(err, &asked) && f.UseLocal != nil && f.UseLocal() {
		return f.Local.Ask(ctx, r)
	}
	return d, err
}

// Pending implements Broker: the questions of both, oldest first. A Shared
// failure is returned with the Local questions, so that a console still
// shows what it can answer.
func (f *Fallback) Pending(ctx context.Context) ([]Request, error) {
	local, lerr := f.Local.Pending(ctx)
	shared, serr := f.Shared.Pending(ctx)
	out := append(shared, local...)
	slices.SortFunc(out, func(a, b Request) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, errors.Join(serr, lerr)
}

// Decide implements Broker.
func (f *Fallback) Decide(ctx context.Context, id string, d Decision, groups []string) error {
	err := f.Local.Decide(ctx, id, d, groups)
	if !errors.Is(err, ErrNotFound) {
		return err
	}
	return f.Shared.Decide(ctx, id, d, groups)
}

// Subscribe implements Broker.
func (f *Fallback) Subscribe() (<-chan struct{}, func()) {
	ls, lcancel := f.Local.Subscribe()
	ss, scancel := f.Shared.Subscribe()
	out := make(chan struct{}, 1)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-ls:
			case <-ss:
			case <-stop:
				return
			}
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	var once sync.Once
	return out, func() {
		once.Do(func() {
			lcancel()
			scancel()
			close(stop)
		})
	}
}
