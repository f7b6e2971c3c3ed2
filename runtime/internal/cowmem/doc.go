// Package cowmem backs WebAssembly linear memories with a shared,
// copy-on-write image of a module's initialized memory.
//
// A warden module is initialized once; every later instance and every reset
// between calls must start from that state. Copying the whole image (5 MiB
// for a Go guest) into each instance costs memory per instance and time per
// reset, though a call writes only a few dozen of its pages. On Linux an
// Image lives in a sealed memfd, and each Memory maps it privately at the
// head of a region reserved for the tool's memory limit: instances share the
// image's pages until they write them. Reset finds the pages the instance
// has its own copy of (/proc/self/pagemap) and copies the image back into
// just those, clearing written pages past the image: it costs in proportion
// to the pages the instance wrote, not to the image, and leaves every page
// mapped, so the next call faults only on pages it writes for the first
// time. Where the pagemap cannot be read, Reset drops the written pages
// instead (madvise MADV_DONTNEED): right, but every page is faulted in again.
//
// Elsewhere, or when a mapping cannot be made, the same API copies: the
// image is a Go byte slice and Reset copies it into the memory, as before.
// Image.Shared reports which one is in effect.
//
// A Memory is a wazero experimental.MemoryAllocator for one instance's
// single memory: once it holds the image it never moves (its region is
// reserved up front), it refuses to grow past the limit and remembers that
// it did (Refused), and wazero's Free releases it. The region is mapped
// memory, never Go heap, so the garbage collector neither scans nor moves
// it; wazero reaches it through the slice Reallocate returns.
package cowmem
