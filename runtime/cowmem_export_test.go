package runtime

import "context"

// DropIdle closes t's module's idle instances (the load-time one among
// them), so that the next call makes a fresh instance from the snapshot.
func DropIdle(t *Tool) {
	p := t.module.loaded().pool
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
	p := t.module.loaded().pool
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, in := range p.idle {
		shared = append(shared, in.Memory.Cow != nil && in.Memory.Cow.Shared())
		sizes = append(sizes, in.Memory.Size())
	}
	return shared, sizes
}

// SessionMemoryShared reports whether the instance a session keeps maps the
// snapshot copy-on-write.
func SessionMemoryShared(t *Tool, session string) bool {
	p := t.module.loaded().pool
	p.mu.Lock()
	s := p.sessions[session]
	p.mu.Unlock()
	return s != nil && s.in != nil && s.in.Memory.Cow != nil && s.in.Memory.Cow.Shared()
}

// SnapshotLen is the length of t's module's snapshot image (0 without one).
func SnapshotLen(t *Tool) int {
	e, ok := t.module.loaded().engine.(*native)
	if !ok || e.snapshot == nil {
		return 0
	}
	return e.snapshot.Len()
}

// SessionRegion is the address of the region of the instance a session
// keeps (0 when none, or not a region).
func SessionRegion(t *Tool, session string) uintptr {
	p := t.module.loaded().pool
	p.mu.Lock()
	s := p.sessions[session]
	p.mu.Unlock()
	if s == nil || s.in == nil || s.in.Memory.Cow == nil {
		return 0
	}
	return s.in.Memory.Cow.Base()
}

// WithCopiedSnapshots returns o with native modules' snapshots copied into
// every instance (guest.TakeCopiedSnapshot), as on every OS but Linux.
func WithCopiedSnapshots(o Options) Options {
	o.copySnapshots = true
	return o
}
