package cowmem

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

var osPage = os.Getpagesize()

// sharedBacking is an image in a sealed memfd, with a read-only mapping of
// it for CopyTo.
type sharedBacking struct {
	memfd  int
	length int // the fd's size: the image rounded up to the OS page
	view   unsafe.Pointer
	once   sync.Once
}

func newSharedBacking(content []byte) (*sharedBacking, error) {
	length := roundUp(len(content), osPage)
	if length == 0 {
		return nil, fmt.Errorf("cowmem: empty image")
	}
	fd, err := unix.MemfdCreate("warden-snapshot", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_NOEXEC_SEAL)
	if err == unix.EINVAL { // kernels before 6.3 know no MFD_NOEXEC_SEAL
		fd, err = unix.MemfdCreate("warden-snapshot", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("cowmem: memfd_create: %w", err)
	}
	fail := func(what string, err error) (*sharedBacking, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("cowmem: %s: %w", what, err)
	}
	if err := unix.Ftruncate(fd, int64(length)); err != nil {
		return fail("ftruncate", err)
	}
	// Zero pages are left as holes: they cost no memory in the file.
	for off := 0; off < len(content); off += osPage {
		page := content[off:min(off+osPage, len(content))]
		if isZero(page) {
			continue
		}
		for done := 0; done < len(page); {
			n, err := unix.Pwrite(fd, page[done:], int64(off+done))
			if err != nil {
				return fail("write", err)
			}
			done += n
		}
	}
	// Sealed, the image can change no more, whoever holds the fd: a
	// Memory's private mapping of it can only diverge by copy on write.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS,
		unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		return fail("seal", err)
	}
	view, err := unix.MmapPtr(fd, 0, nil, uintptr(length), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return fail("mmap", err)
	}
	return &sharedBacking{memfd: fd, length: length, view: view}, nil
}

func (s *sharedBacking) bytes() []byte  { return unsafe.Slice((*byte)(s.view), s.length) }
func (s *sharedBacking) fd() int        { return s.memfd }
func (s *sharedBacking) mappedLen() int { return s.length }

func (s *sharedBacking) release() {
	s.once.Do(func() {
		unix.MunmapPtr(s.view, uintptr(s.length))
		unix.Close(s.memfd)
	})
}

// reserve maps length bytes of address space that no access may touch yet
// and that cost nothing until committed.
func reserve(length int) (unsafe.Pointer, error) {
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(length), unix.PROT_NONE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("cowmem: reserve %d bytes: %w", length, err)
	}
	return p, nil
}

// commit makes [from, to) of a reserved region readable and writable.
func commit(base unsafe.Pointer, from, to int) error {
	if err := unix.Mprotect(unsafe.Slice((*byte)(unsafe.Add(base, from)), to-from), unix.PROT_READ|unix.PROT_WRITE); err != nil {
		return fmt.Errorf("cowmem: commit [%d, %d): %w", from, to, err)
	}
	return nil
}

// mapImage maps the head of a region privately from fd: reads see the
// image, writes copy the page.
func mapImage(base unsafe.Pointer, fd, length int) error {
	if _, err := unix.MmapPtr(fd, 0, base, uintptr(length), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_FIXED); err != nil {
		return fmt.Errorf("cowmem: map image: %w", err)
	}
	return nil
}

// discard drops [from, to)'s private pages: the image's part reads the
// image again, the anonymous part reads zero.
func discard(base unsafe.Pointer, from, to int) error {
	if from >= to {
		return nil
	}
	if err := unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(base, from)), to-from), unix.MADV_DONTNEED); err != nil {
		return fmt.Errorf("cowmem: discard [%d, %d): %w", from, to, err)
	}
	return nil
}

func unmap(base unsafe.Pointer, length int) {
	unix.MunmapPtr(base, uintptr(length))
}

// pageFlags reads /proc/self/pagemap: one 64-bit entry per virtual page,
// bit 63 present, bit 62 swapped, bit 61 file page or shared anonymous
// (Documentation/admin-guide/mm/pagemap.rst). In a private mapping of the
// image, a page that is present or swapped and not a file page is a private
// copy: the instance wrote it.
type pageFlags = *os.File

func openPageFlags() pageFlags {
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return nil
	}
	// Probe once: a pagemap that cannot be read (a restricted /proc)
	// leaves Reset to drop pages instead.
	var probe [8]byte
	if _, err := f.ReadAt(probe[:], int64(uintptr(unsafe.Pointer(&probe))/uintptr(osPage))*8); err != nil {
		f.Close()
		return nil
	}
	return f
}

const (
	pagePresent = 1 << 63
	pageSwapped = 1 << 62
	pageFile    = 1 << 61
)

// privatePages calls visit with the index of each page of [base, base +
// pages*osPage) that is a private copy (present or swapped, not a file
// page), reading the entries in chunks through scratch.
func privatePages(pm pageFlags, base unsafe.Pointer, pages int, scratch []byte, visit func(page int)) error {
	first := int64(uintptr(base) / uintptr(osPage))
	for done := 0; done < pages; {
		n := min(pages-done, len(scratch)/8)
		chunk := scratch[:n*8]
		if _, err := pm.ReadAt(chunk, (first+int64(done))*8); err != nil {
			return fmt.Errorf("cowmem: read pagemap: %w", err)
		}
		for i := range n {
			e := *(*uint64)(unsafe.Pointer(&chunk[i*8]))
			if e&(pagePresent|pageSwapped) != 0 && e&pageFile == 0 {
				visit(done + i)
			}
		}
		done += n
	}
	return nil
}
