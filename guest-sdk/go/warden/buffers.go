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
	// lent is a list, not a map: a call has a buffer or two outstanding at
	// a time (its request, a capability's reply), and scanning that few
	// costs fewer instructions than a map's hashing and bookkeeping.
	lent     []lentBuffer
	response []byte
	// spare is the storage of warden_call's previous response, which the
	// host has read by the time the next export call begins: the next
	// response is appended to it instead of to a new allocation.
	spare []byte
}

// maxSpare bounds the response storage kept for reuse, so that one large
// response does not stay allocated for the module's lifetime.
const maxSpare = 64 << 10

type lentBuffer struct {
	addr uint32
	buf  []byte
}

func newBuffers() *buffers { return &buffers{} }

// alloc returns a new zeroed buffer of size bytes (at least one, so that
// every buffer has a distinct address) and records it under the address
// that addr reports for it. It returns nil for a negative size.
func (b *buffers) alloc(size int32, addr func([]byte) uint32) (uint32, []byte) {
	if size < 0 {
		return 0, nil
	}
	buf := make([]byte, max(size, 1))
	a := addr(buf)
	b.lent = append(b.lent, lentBuffer{a, buf})
	return a, buf[:size]
}

// take returns the first n bytes of the lent buffer at address a and stops
// lending it. ok is false if a is not the start of a lent buffer or n
// exceeds its size: the host may only hand back what warden_alloc gave it.
func (b *buffers) take(a, n uint32) (data []byte, ok bool) {
	if a == 0 && n == 0 {
		return nil, true
	}
	for i := range b.lent {
		if b.lent[i].addr != a {
			continue
		}
		buf := b.lent[i].buf
		if uint64(n) > uint64(len(buf)) {
			return nil, false
		}
		last := len(b.lent) - 1
		b.lent[i] = b.lent[last]
		b.lent[last] = lentBuffer{} // drop the reference
		b.lent = b.lent[:last]
		return buf[:n], true
	}
	return nil, false
}

// reset forgets everything lent before the current export call.
func (b *buffers) reset() {
	clear(b.lent) // drop the references, keep the storage
	b.lent = b.lent[:0]
	b.response = nil
}

// reuse returns, emptied, the storage of the last response that keep
// marked reusable, or nil; it must be called only after reset, once the
// host no longer reads that response.
func (b *buffers) reuse() []byte {
	spare := b.spare
	b.spare = nil
	return spare[:0]
}

// keep marks resp, which no one but b references (Dispatch's responses are
// always freshly built), reusable by the next call's reuse.
func (b *buffers) keep(resp []byte) {
	if cap(resp) <= maxSpare {
		b.spare = resp
	}
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
