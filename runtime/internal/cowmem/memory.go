package cowmem

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
)

// Memory is one instance's linear memory, reset to an Image between uses.
// Pass it to wazero with experimental.WithMemoryAllocator when instantiating
// a module with one memory; it serves that memory only.
//
// When the image is shared, the memory is a region reserved for the whole
// limit, so it never moves once it holds the image; from the first Reset on
// its head is a private mapping of the image. Otherwise it is a Go slice and
// Reset copies.
//
// Until its first Reset a memory's content is unspecified: the memory is
// made for an instance that runs no code before it is reset to the image.
// (The module's data segments, which wazero writes at instantiation, are
// not kept: Reset replaces them anyway.)
//
// A Memory is used by one goroutine at a time (its instance's), except
// Refused and Size, which are safe to call from any.
type Memory struct {
	image *Image
	limit uint64
	buf   []byte
	size  atomic.Uint64
	// refused records a Reallocate past the limit.
	refused atomic.Bool

	// region is the reserved address space (nil for a Go slice memory);
	// reserved is its length and committed how much of it is writable.
	region              unsafe.Pointer
	reserved, committed int
	// mapped says the image is mapped over the region's head.
	mapped bool
	// strategy is how Reset undoes writes to a mapped region.
	strategy resetStrategy
	// entries holds pagemap entries while restoring.
	entries []byte
	// staging is the Go buffer the memory is until it first grows, when it
	// starts smaller than the image (see Reallocate).
	staging *[]byte
	freed   bool
	cleanup runtime.Cleanup
}

var (
	_ experimental.MemoryAllocator = (*Memory)(nil)
	_ experimental.LinearMemory    = (*Memory)(nil)
)

// NewMemory returns a memory of at most limit bytes that resets to the
// image. It holds a reference to the image until wazero frees it (or, for a
// memory never handed to wazero, until Free). It fails only when the image
// is closed: no new instance starts from an image its owner let go.
func (im *Image) NewMemory(limit uint64) (*Memory, error) {
	if im.closed.Load() || !im.acquire() {
		return nil, ErrClosed
	}
	m := &Memory{image: im, limit: limit, strategy: im.strategy}
	if im.Shared() && limit <= uint64(maxReserve) {
		// A region that cannot be reserved (address space or map count
		// exhausted) leaves this memory a Go slice: slower, still right.
		length := max(roundUp(int(limit), osPage), im.backing.mappedLen())
		if base, err := reserve(length); err == nil {
			m.region, m.reserved = base, length
		}
	}
	m.cleanup = runtime.AddCleanup(m, releaseMemory, memoryRelease{image: im, region: m.region, reserved: m.reserved})
	return m, nil
}

// maxReserve bounds a region's address space (a tool's limit is far below).
const maxReserve = 1 << 40

// memoryRelease is what a Memory that was never freed gives back when the
// garbage collector finds it unreachable (so is its instance, and nothing
// can reach the region any more).
type memoryRelease struct {
	image    *Image
	region   unsafe.Pointer
	reserved int
}

func releaseMemory(r memoryRelease) {
	if r.region != nil {
		unmap(r.region, r.reserved)
	}
	r.image.releaseRef()
}

// Shared reports whether the memory maps its image rather than copying it.
func (m *Memory) Shared() bool { return m.region != nil }

// Base is the address of the memory's region, 0 for a Go slice memory or
// after Free: what /proc/self/maps names it by, for tests that check a
// freed memory is unmapped.
func (m *Memory) Base() uintptr { return uintptr(m.region) }

// Refused reports whether a Reallocate was refused for passing the limit
// since the last ClearRefused.
func (m *Memory) Refused() bool { return m.refused.Load() }

// ClearRefused forgets a refusal, before a new call.
func (m *Memory) ClearRefused() { m.refused.Store(false) }

// Size is the memory's current length in bytes (what wazero was handed).
func (m *Memory) Size() uint64 { return m.size.Load() }

// Allocate implements experimental.MemoryAllocator. wazero calls it once,
// then Reallocate with the memory's minimum.
func (m *Memory) Allocate(_, _ uint64) experimental.LinearMemory { return m }

// Reallocate implements experimental.LinearMemory: it returns the memory
// grown to size bytes, the new bytes reading zero, or nil when size passes
// the limit (remembered, see Refused) or the memory cannot grow.
func (m *Memory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.refused.Store(true)
		return nil
	}
	if m.freed {
		return nil
	}
	if size <= uint64(len(m.buf)) {
		return m.buf[:size]
	}
	if m.region != nil && m.buf == nil && size < uint64(m.image.size) {
		// wazero's first Reallocate, with the module's minimum, is
		// followed by its data segments, which would fault in and then
		// drop hundreds of pages of the region (a Go guest's are 1.6 MiB)
		// though Reset replaces them all. They go to a reused Go buffer
		// instead, dropped when the memory first grows (as the runtime
		// grows it to the image's length before its first Reset).
		m.staging = m.image.staging(size)
		m.buf = (*m.staging)[:size]
		m.size.Store(size)
		return m.buf
	}
	if m.staging != nil {
		m.image.unstage(m.staging)
		m.staging, m.buf = nil, nil
	}
	if m.region == nil {
		m.growSlice(size)
	} else if !m.growRegion(int(size)) {
		return nil
	}
	m.size.Store(size)
	return m.buf
}

func (m *Memory) growSlice(size uint64) {
	if size <= uint64(cap(m.buf)) {
		// Capacity past the old length was never handed out: it is zero.
		m.buf = m.buf[:size]
		return
	}
	grown := make([]byte, size, min(max(size, 2*uint64(cap(m.buf))), m.limit))
	copy(grown, m.buf)
	m.buf = grown
}

func (m *Memory) growRegion(size int) bool {
	if size > m.reserved {
		return false
	}
	if end := roundUp(size, osPage); end > m.committed {
		if commit(m.region, m.committed, end) != nil {
			return false
		}
		m.committed = end
	}
	// Never handed out since the region was reserved or last reset (reset
	// discards up to the length), so it reads zero or, under the image,
	// the image; Reset requires the length to cover the image before it
	// maps it, so the latter is only ever seen after a Reset.
	m.buf = unsafe.Slice((*byte)(m.region), size)
	return true
}

// Reset returns the memory to the image: its first Len bytes read the image
// and the rest of its length reads zero; the length stays (wazero cannot
// shrink a memory). The memory must already be at least as long as the
// image. On error the memory's content is unspecified and the instance
// should be dropped.
func (m *Memory) Reset() error {
	if m.freed {
		return fmt.Errorf("cowmem: reset after free")
	}
	if len(m.buf) < m.image.size {
		return fmt.Errorf("cowmem: reset a %d-byte memory to a %d-byte image", len(m.buf), m.image.size)
	}
	if m.region == nil {
		copy(m.buf, m.image.backing.bytes()[:m.image.size])
		clear(m.buf[m.image.size:])
		return nil
	}
	if !m.mapped || m.strategy == resetRemap {
		return m.remap()
	}
	if m.strategy == resetRestore && m.image.pages != nil {
		if err := m.restorePrivate(); err == nil {
			return nil
		}
		// An unreadable pagemap leaves the slower way, which is still
		// right.
	}
	return discard(m.region, 0, roundUp(len(m.buf), osPage))
}

// resetStrategy is how a mapped memory is reset. The benchmarks compare
// them (RATIONALE.md, "Copy-on-write snapshots"); Memories use resetRestore.
type resetStrategy int

const (
	// resetRestore copies the image back into the pages the instance has
	// its own copy of, found in the pagemap, and zeroes written pages past
	// the image: every page stays mapped, so the next call faults only on
	// pages it writes for the first time.
	resetRestore resetStrategy = iota
	// resetDiscard drops every private page (madvise MADV_DONTNEED): the
	// memory holds no private page after it, and the next call faults on
	// every page it touches.
	resetDiscard
	// resetRemap maps the image afresh and drops the rest.
	resetRemap
)

// restorePrivate is resetRestore.
func (m *Memory) restorePrivate() error {
	if m.entries == nil {
		m.entries = make([]byte, 8*512)
	}
	head := m.image.backing.mappedLen()
	image := m.image.backing.bytes()
	pages := roundUp(len(m.buf), osPage) / osPage
	return privatePages(m.image.pages, m.region, pages, m.entries, func(p int) {
		at := p * osPage
		page := m.buf[at:min(at+osPage, len(m.buf))]
		if at < head {
			copy(page, image[at:])
		} else if !isZero(page) {
			// A page past the image is private once read (the zero
			// page) or written; only written ones need clearing, and
			// writing a read one would copy it.
			clear(page)
		}
	})
}

// remap maps the image afresh over the head and discards the rest: the
// first Reset, and the alternative to discarding everything that the
// benchmarks compare.
func (m *Memory) remap() error {
	head := m.image.backing.mappedLen()
	if err := mapImage(m.region, m.image.backing.fd(), head); err != nil {
		return err
	}
	m.mapped = true
	return discard(m.region, head, roundUp(len(m.buf), osPage))
}

// Free implements experimental.LinearMemory: it unmaps the memory and drops
// its reference to the image. wazero calls it when the module closes.
// Later calls do nothing.
func (m *Memory) Free() {
	if m.freed {
		return
	}
	m.freed = true
	m.buf = nil
	if m.staging != nil {
		m.image.unstage(m.staging)
		m.staging = nil
	}
	m.size.Store(0)
	m.cleanup.Stop()
	releaseMemory(memoryRelease{image: m.image, region: m.region, reserved: m.reserved})
	m.region = nil
}

func roundUp(n, to int) int { return (n + to - 1) / to * to }

func isZero(b []byte) bool {
	for len(b) >= 8 {
		if *(*uint64)(unsafe.Pointer(&b[0])) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
