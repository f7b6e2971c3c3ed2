package wasmbin

// LEB128 as the binary format uses it: unsigned and signed, with the spec's
// limits on encoded length (ceil(N/7) bytes) and on unused bits of the last
// byte, so that a malformed number is an error rather than silently truncated.

// readUleb reads an unsigned LEB128 number of at most bits bits at b[pos:].
// It returns the value and the position after it; ok is false when the
// encoding is truncated, too long or has bits set beyond the width.
func readUleb(b []byte, pos int, bits uint) (v uint64, next int, ok bool) {
	var shift uint
	for {
		if pos >= len(b) {
			return 0, pos, false
		}
		c := b[pos]
		pos++
		if shift+7 >= bits {
			// Last byte allowed: no continuation bit, no bits above the width.
			rem := bits - shift
			if c&0x80 != 0 || (rem < 7 && c>>rem != 0) {
				return 0, pos, false
			}
			return v | uint64(c)<<shift, pos, true
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, pos, true
		}
		shift += 7
	}
}

// readSleb reads a signed LEB128 number of at most bits bits at b[pos:].
func readSleb(b []byte, pos int, bits uint) (v int64, next int, ok bool) {
	var shift uint
	var u uint64
	for {
		if pos >= len(b) {
			return 0, pos, false
		}
		c := b[pos]
		pos++
		if shift+7 >= bits {
			// Last byte: the unused high bits must all equal the sign bit.
			if c&0x80 != 0 {
				return 0, pos, false
			}
			rem := bits - shift // value bits left, including sign
			if rem < 7 {
				hi := int8(c<<1) >> rem // bits [rem, 7) sign-extended
				if hi != 0 && hi != -1 || (hi == -1) != (c&(1<<(rem-1)) != 0) {
					return 0, pos, false
				}
			}
			u |= uint64(c&0x7f) << shift
			shift += 7
			break
		}
		u |= uint64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			break
		}
	}
	if shift < 64 && u&(1<<(shift-1)) != 0 {
		u |= ^uint64(0) << shift
	}
	return int64(u), pos, true
}

// AppendU32 appends v as unsigned LEB128.
func AppendU32(b []byte, v uint32) []byte { return AppendU64(b, uint64(v)) }

// AppendU64 appends v as unsigned LEB128.
func AppendU64(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// AppendS32 appends v as signed LEB128.
func AppendS32(b []byte, v int32) []byte { return AppendS64(b, int64(v)) }

// AppendS64 appends v as signed LEB128.
func AppendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
