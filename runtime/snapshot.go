package runtime

import (
	"fmt"

	"github.com/tetratelabs/wazero/api"

	"github.com/warden-run/warden/runtime/internal/cowmem"
)

// snapshot is a module's state right after _initialize: its linear memory
// and every mutable global. Restoring it into any instance of the module
// gives the state _initialize would have produced, in the time of a memory
// copy instead of a Go runtime start (milliseconds). The instrumentation pass
// exports the module's mutable globals so that they can be read and set.
//
// The memory is a cowmem image: on Linux the instances made after the
// snapshot map it copy-on-write and a reset drops only the pages the call
// wrote (RATIONALE.md, "Copy-on-write snapshots"); other memories, and
// every memory elsewhere, get it copied in.
type snapshot struct {
	image   *cowmem.Image
	globals []string // export names
	values  []uint64
	// virtualPages says memory.grow and memory.size were rewritten against a
	// global, so an instance whose memory grew can still be reset: its extra
	// pages are zeroed and the guest sees its initial size again.
	virtualPages bool
}

func takeSnapshot(in *instance, globals []string, virtualPages bool) (*snapshot, error) {
	s := &snapshot{globals: globals, virtualPages: virtualPages}
	mem := in.mod.Memory()
	view, ok := mem.Read(0, mem.Size())
	if !ok {
		return nil, fmt.Errorf("snapshot: cannot read memory")
	}
	s.image = cowmem.NewImage(view)
	for _, name := range globals {
		g := in.mod.ExportedGlobal(name)
		if g == nil {
			return nil, fmt.Errorf("snapshot: global export %q missing", name)
		}
		if _, ok := g.(api.MutableGlobal); !ok {
			return nil, fmt.Errorf("snapshot: global export %q is not mutable", name)
		}
		s.values = append(s.values, g.Get())
	}
	return s, nil
}

// restore resets in to the snapshot. It reports false when it cannot, and
// the instance must then be discarded.
func (s *snapshot) restore(in *instance) bool {
	mem := in.mod.Memory()
	size := mem.Size()
	if want := uint32(s.image.Len()); size < want {
		// A new instance starts at the module's declared minimum; _initialize
		// grew the snapshotted one.
		if _, ok := mem.Grow((want - size) / 65536); !ok {
			return false
		}
		size = mem.Size()
	}
	if !s.virtualPages && int(size) != s.image.Len() {
		return false
	}
	if cow := in.memory.cow; cow != nil {
		if cow.Reset() != nil {
			return false
		}
	} else {
		view, ok := mem.Read(0, size)
		if !ok || !s.image.CopyTo(view) {
			return false
		}
	}
	if in.globals == nil {
		in.globals = make([]api.MutableGlobal, len(s.globals))
		for i, name := range s.globals {
			in.globals[i] = in.mod.ExportedGlobal(name).(api.MutableGlobal)
		}
	}
	for i, g := range in.globals {
		g.Set(s.values[i])
	}
	return true
}

// newMemory returns a memory of at most limit bytes that maps the image
// copy-on-write, or nil when the image is not shared (the instance then
// copies it) or already closed.
func (s *snapshot) newMemory(limit uint64) *cowmem.Memory {
	if !s.image.Shared() {
		return nil
	}
	mem, err := s.image.NewMemory(limit)
	if err != nil {
		return nil
	}
	return mem
}

// close lets the image go once the instances mapping it are closed.
func (s *snapshot) close() { s.image.Close() }
