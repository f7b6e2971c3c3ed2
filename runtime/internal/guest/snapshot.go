package guest

import (
	"fmt"

	"github.com/tetratelabs/wazero/api"

	"github.com/warden-run/warden/runtime/internal/cowmem"
)

// Snapshot is a module's state right after _initialize: its linear memory
// and every mutable global. Restoring it into any instance of the module
// gives the state _initialize would have produced, in the time of a memory
// copy instead of a Go runtime start (milliseconds). The instrumentation pass
// exports the module's mutable globals so that they can be read and set.
//
// The memory is a cowmem image: on Linux the instances made after the
// snapshot map it copy-on-write and a reset restores only the pages the
// instance wrote (RATIONALE.md, "Copy-on-write snapshots"); other memories,
// and every memory elsewhere, get it copied in.
type Snapshot struct {
	image   *cowmem.Image
	globals []string // export names
	values  []uint64
	// virtualPages says memory.grow and memory.size were rewritten against a
	// global, so an instance whose memory grew can still be reset: its extra
	// pages are zeroed and the guest sees its initial size again.
	virtualPages bool
}

// TakeSnapshot reads in's memory and the given mutable globals (export
// names).
func TakeSnapshot(in *Instance, globals []string, virtualPages bool) (*Snapshot, error) {
	return takeSnapshot(in, globals, virtualPages, cowmem.NewImage)
}

// TakeCopiedSnapshot is TakeSnapshot whose image every instance gets copied
// in, as on every OS but Linux, so that the tests run that path here too.
func TakeCopiedSnapshot(in *Instance, globals []string, virtualPages bool) (*Snapshot, error) {
	return takeSnapshot(in, globals, virtualPages, cowmem.NewCopyImage)
}

func takeSnapshot(in *Instance, globals []string, virtualPages bool, newImage func([]byte) *cowmem.Image) (*Snapshot, error) {
	s := &Snapshot{globals: globals, virtualPages: virtualPages}
	mem := in.Mod.Memory()
	view, ok := mem.Read(0, mem.Size())
	if !ok {
		return nil, fmt.Errorf("snapshot: cannot read memory")
	}
	s.image = newImage(view)
	for _, name := range globals {
		g := in.Mod.ExportedGlobal(name)
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

// Restore resets in to the snapshot. It reports false when it cannot, and
// the instance must then be discarded.
func (s *Snapshot) Restore(in *Instance) bool {
	mem := in.Mod.Memory()
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
	if cow := in.Memory.Cow; cow != nil {
		if cow.Reset() != nil {
			return false
		}
	} else {
		view, ok := mem.Read(0, size)
		if !ok || !s.image.CopyTo(view) {
			return false
		}
	}
	if in.Globals == nil {
		in.Globals = make([]api.MutableGlobal, len(s.globals))
		for i, name := range s.globals {
			in.Globals[i] = in.Mod.ExportedGlobal(name).(api.MutableGlobal)
		}
	}
	for i, g := range in.Globals {
		g.Set(s.values[i])
	}
	return true
}

// NewMemory returns a memory of at most limit bytes that maps the image
// copy-on-write (for LimitedMemory.Cow), or nil when the image is not shared
// (the instance then copies it) or already closed.
func (s *Snapshot) NewMemory(limit uint64) *cowmem.Memory {
	if !s.image.Shared() {
		return nil
	}
	mem, err := s.image.NewMemory(limit)
	if err != nil {
		return nil
	}
	return mem
}

// Close lets the image go once the instances mapping it are closed.
func (s *Snapshot) Close() { s.image.Close() }

// Shared reports whether instances map the image copy-on-write.
func (s *Snapshot) Shared() bool { return s.image.Shared() }

// Len is the snapshot's memory length in bytes.
func (s *Snapshot) Len() int { return s.image.Len() }
