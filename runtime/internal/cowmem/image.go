package cowmem

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
)

// ErrClosed is returned when an Image is used after its last reference went.
var ErrClosed = errors.New("cowmem: image closed")

// Image is the content a Memory is reset to, shared by every Memory made
// from it. It is safe for concurrent use.
type Image struct {
	size int
	// backing holds the content: a sealed memfd and a read-only mapping of
	// it when shared, a private Go copy otherwise.
	backing backing
	// refs counts the owner's reference (dropped by Close) and one per
	// Memory not yet freed; the backing is released when it reaches zero.
	refs    atomic.Int64
	closed  atomic.Bool
	cleanup runtime.Cleanup
	// sharedErr says why the image is not shared (nil when it is).
	sharedErr error
	// pages reads which pages of a Memory are private copies (Linux's
	// /proc/self/pagemap), so that Reset restores only those; nil when it
	// cannot be read, and Reset then drops the written pages instead.
	pages pageFlags
	// strategy is how its Memories reset (tests and benchmarks change it).
	strategy resetStrategy
	// stagingPool keeps the buffers Memories hold until their first growth.
	stagingPool sync.Pool
}

// staging returns a buffer of at least size bytes, content unspecified.
func (im *Image) staging(size uint64) *[]byte {
	if b, ok := im.stagingPool.Get().(*[]byte); ok && uint64(len(*b)) >= size {
		return b
	}
	b := make([]byte, size)
	return &b
}

func (im *Image) unstage(b *[]byte) { im.stagingPool.Put(b) }

// NewImage makes an image holding a copy of content. It is shared (copy on
// write) where the platform allows; otherwise it keeps a private copy and
// Memories copy it on Reset. content may be modified afterwards.
func NewImage(content []byte) *Image { return newImage(content, true) }

// NewCopyImage makes an image that Memories copy on Reset on every
// platform: the backing NewImage falls back to where it cannot share (every
// OS but Linux). The runtime's tests use it to run that path on Linux.
func NewCopyImage(content []byte) *Image { return newImage(content, false) }

// errNotAsked is the SharingError of an image made to copy.
var errNotAsked = errors.New("cowmem: sharing not asked for")

func newImage(content []byte, share bool) *Image {
	im := &Image{size: len(content)}
	var b backing
	shared, err := (*sharedBacking)(nil), errNotAsked
	if share {
		shared, err = newSharedBacking(content)
	}
	if err == nil {
		b = shared
	} else {
		b, im.sharedErr = newCopyBacking(content), err
	}
	im.backing = b
	if im.sharedErr == nil {
		im.pages = openPageFlags()
	}
	im.refs.Store(1)
	// A module that is dropped without Close must not keep its memfd and
	// mapping until the process ends.
	im.cleanup = runtime.AddCleanup(im, func(r imageRelease) { r.release() }, imageRelease{b, im.pages})
	return im
}

// Len is the image's length in bytes.
func (im *Image) Len() int { return im.size }

// Shared reports whether Memories made from the image share its pages
// (copy on write) rather than copying it.
func (im *Image) Shared() bool { return im.sharedErr == nil }

// SharingError says why the image is not shared, or nil when it is.
func (im *Image) SharingError() error { return im.sharedErr }

// CopyTo copies the image into the head of dst and zeroes the rest of dst,
// which must be at least Len bytes. It is how a memory that is not a Memory
// of this image is reset. It reports false when dst is too short or the
// image is closed.
func (im *Image) CopyTo(dst []byte) bool {
	if len(dst) < im.size || !im.acquire() {
		return false
	}
	defer im.releaseRef()
	copy(dst, im.backing.bytes()[:im.size])
	clear(dst[im.size:])
	return true
}

// Close drops the owner's reference. Memories made from the image stay
// valid; the image's memory is released when the last of them is freed.
// Close is idempotent.
func (im *Image) Close() {
	if im.closed.CompareAndSwap(false, true) {
		im.releaseRef()
	}
}

// acquire takes a reference unless the image is already released.
func (im *Image) acquire() bool {
	for {
		n := im.refs.Load()
		if n <= 0 {
			return false
		}
		if im.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (im *Image) releaseRef() {
	switch n := im.refs.Add(-1); {
	case n == 0:
		im.cleanup.Stop()
		imageRelease{im.backing, im.pages}.release()
	case n < 0:
		panic("cowmem: image released more often than acquired")
	}
}

type imageRelease struct {
	backing backing
	pages   pageFlags
}

func (r imageRelease) release() {
	r.backing.release()
	if r.pages != nil {
		r.pages.Close()
	}
}

// backing is where an image's bytes live.
type backing interface {
	// bytes returns the content, at least the image's length.
	bytes() []byte
	// fd is the memfd to map, or -1.
	fd() int
	// mappedLen is how many bytes of the fd a Memory maps (the image
	// rounded up to the OS page).
	mappedLen() int
	release()
}

type copyBacking struct{ data []byte }

func newCopyBacking(content []byte) copyBacking {
	return copyBacking{data: append([]byte(nil), content...)}
}

func (c copyBacking) bytes() []byte  { return c.data }
func (c copyBacking) fd() int        { return -1 }
func (c copyBacking) mappedLen() int { return 0 }
func (c copyBacking) release()       {}
