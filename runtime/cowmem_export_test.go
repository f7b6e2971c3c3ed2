package runtime

import "context"

// DropIdle closes t's module's idle instances (the load-time one among
// them), so that the next call makes a fresh instance from the snapshot.
func DropIdle(t *Tool) {
	p := t.module.pool
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, in := range idle {
		in.close(context.Background())
	}
}

// IdleMemories reports, for each idle instance of t's module, whether its
// memory maps the snapshot copy-on-write, and its length in bytes.
func IdleMemories(t *Tool) (shared []bool, sizes []uint64) {
	p := t.module.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, in := range p.idle {
		shared = append(shared, in.memory.cow != nil && in.memory.cow.Shared())
		sizes = append(sizes, in.memory.size())
	}
	return shared, sizes
}

// SessionMemoryShared reports whether the instance a session keeps maps the
// snapshot copy-on-write.
func SessionMemoryShared(t *Tool, session string) bool {
	p := t.module.pool
	p.mu.Lock()
	s := p.sessions[session]
	p.mu.Unlock()
	return s != nil && s.in != nil && s.in.memory.cow != nil && s.in.memory.cow.Shared()
}

// SnapshotLen is the length of t's module's snapshot image (0 without one).
func SnapshotLen(t *Tool) int {
	if t.module.snapshot == nil {
		return 0
	}
	return t.module.snapshot.image.Len()
}
