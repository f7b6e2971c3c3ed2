package warden

// buffers holds the memory the module has lent to the host. Go's collector
// does not move objects but does free unreferenced ones, so every byte range
// whose address the host holds must stay referenced from here:
//
//   - a buffer from warden_alloc, until the export or import it was allocated
//     for consumes it (take), or the next export call begins (reset): the
//     host writes into it after warden_alloc has returned;
//   - the last response, until the next export call: the host reads it after
//     warden_describe or warden_call has returned.
//
// It is plain Go so that its bookkeeping is tested on the host; the wasip1
// file supplies the addresses.
type buffers struct {
	lent     map[uint32][]byte
	response []byte
}

func newBuffers() *buffers { return &buffers{lent: map[uint32][]byte{}} }

// alloc returns a new zeroed buffer of size bytes (at least one, so that
// every buffer has a distinct address) and records it under the address
// that addr reports for it. It returns nil for a negative size.
func (b *buffers) alloc(size int32, addr func([]byte) uint32) (uint32, []byte) {
	if size < 0 {
		return 0, nil
	}
	buf := make([]byte, max(size, 1))
	a := addr(buf)
	b.lent[a] = buf
	return a, buf[:size]
}

// take returns the first n bytes of the lent buffer at address a and stops
// lending it. ok is false if a is not the start of a lent buffer or n
// exceeds its size: the host may only hand back what warden_alloc gave it.
func (b *buffers) take(a, n uint32) (data []byte, ok bool) {
	if a == 0 && n == 0 {
		return nil, true
	}
	buf, found := b.lent[a]
	if !found || uint64(n) > uint64(len(buf)) {
		return nil, false
	}
	delete(b.lent, a)
	return buf[:n], true
}

// reset forgets everything lent before the current export call.
func (b *buffers) reset() {
	clear(b.lent)
	b.response = nil
}

// respond keeps resp alive until the next export call and returns it.
func (b *buffers) respond(resp []byte) []byte {
	b.response = resp
	return resp
}

// pack encodes a range as the ABI's i64: ptr<<32 | len.
func pack(ptr, n uint32) uint64 { return uint64(ptr)<<32 | uint64(n) }

// unpack is the inverse of pack.
func unpack(v uint64) (ptr, n uint32) { return uint32(v >> 32), uint32(v) }
