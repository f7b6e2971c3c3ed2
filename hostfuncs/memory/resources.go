package memory

import (
	"context"
	"errors"
	"sync"
	"time"
)

// What the host itself reads of the store, for serving memories as MCP
// resources (config server.resources.memory), and the hook that tells it of
// writes.

// Change is one write a tool made through the capability.
type Change struct {
	Topic string
	// Op is "set", "append" or "delete".
	Op string
}

// watchers holds the functions that hear of writes.
type watchers struct {
	mu   sync.Mutex
	next int
	fs   map[int]func(Change)
}

func (w *watchers) add(f func(Change)) (cancel func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fs == nil {
		w.fs = map[int]func(Change){}
	}
	id := w.next
	w.next++
	w.fs[id] = f
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.fs, id)
	}
}

func (w *watchers) notify(c Change) {
	w.mu.Lock()
	fs := make([]func(Change), 0, len(w.fs))
	for _, f := range w.fs {
		fs = append(fs, f)
	}
	w.mu.Unlock()
	for _, f := range fs {
		f(c)
	}
}

// Watch registers f to hear of every write a tool makes through the
// capability (set, append, and a delete that deleted), after it is durable.
// f runs on the writing call's goroutine and must return soon. Writes made
// outside warden (an editor, git) are not seen.
func (m *Memory) Watch(f func(Change)) (cancel func()) { return m.watchers.add(f) }

// Topics lists every memory in the store, sorted, at most 1000 (truncated
// beyond), leaving out what the list op leaves out (links, hard-linked and
// denied files). It applies no grant: the host reads it for the person who
// configured warden.
func (m *Memory) Topics() (entries []Entry, truncated bool, err error) {
	return m.TopicsContext(context.Background())
}

// TopicsContext is Topics bounded by ctx.
func (m *Memory) TopicsContext(ctx context.Context) (entries []Entry, truncated bool, err error) {
	f := m.front.Load()
	entries, truncated, _, err = f.list(ctx, "", func(string) bool { return true })
	if err != nil {
		return nil, false, f.storeError(&request{Op: "list"}, err)
	}
	return entries, truncated, nil
}

// Read returns the memory of topic, as the get op does (without a grant);
// truncated when the file is larger than the value limit.
func (m *Memory) Read(topic string) (value []byte, truncated bool, modified time.Time, err error) {
	return m.ReadContext(context.Background(), topic)
}

// ReadContext is Read bounded by ctx.
func (m *Memory) ReadContext(ctx context.Context, topic string) (value []byte, truncated bool, modified time.Time, err error) {
	if err := ValidateTopic(topic); err != nil {
		return nil, false, time.Time{}, err
	}
	f := m.front.Load()
	value, truncated, modified, err = f.get(ctx, topic)
	if err != nil {
		return nil, false, time.Time{}, f.storeError(&request{Op: "get", Topic: topic}, err)
	}
	return value, truncated, modified, nil
}

// StateLedger is the ledger of spent requestStates (mcpserver.SpentStates)
// kept in the PostgreSQL backend's database, which replicas share.
type StateLedger struct{ m *Memory }

// SpentStates returns the ledger of spent requestStates in the backend's
// database, so that replicas accept each requestState once between them;
// nil on the file backend, which replicas do not share.
func (m *Memory) SpentStates() *StateLedger {
	if _, ok := m.front.Load().backend.(*pgBackend); !ok {
		return nil
	}
	return &StateLedger{m: m}
}

// Spend records nonce as spent until expires and reports whether it was not
// already. It is bounded by memory.postgres.query_timeout.
func (l *StateLedger) Spend(ctx context.Context, nonce string, expires time.Time) (bool, error) {
	p, ok := l.m.front.Load().backend.(*pgBackend)
	if !ok {
		return false, errors.New("the memory backend is no longer PostgreSQL")
	}
	return p.spend(ctx, nonce, expires)
}
