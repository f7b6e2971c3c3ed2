package wasmbin

import "fmt"

// Op is an opcode: the byte for single-byte opcodes, prefix<<8|sub for the
// 0xFC (misc) and 0xFD (SIMD) prefixes, whose valid sub-opcodes all fit in
// a byte.
type Op uint16

// Opcodes the rewriting pass and decoder name individually.
const (
	OpUnreachable        Op = 0x00
	OpNop                Op = 0x01
	OpBlock              Op = 0x02
	OpLoop               Op = 0x03
	OpIf                 Op = 0x04
	OpElse               Op = 0x05
	OpEnd                Op = 0x0b
	OpBr                 Op = 0x0c
	OpBrIf               Op = 0x0d
	OpBrTable            Op = 0x0e
	OpReturn             Op = 0x0f
	OpCall               Op = 0x10
	OpCallIndirect       Op = 0x11
	OpReturnCall         Op = 0x12
	OpReturnCallIndirect Op = 0x13
	OpDrop               Op = 0x1a
	OpSelect             Op = 0x1b
	OpSelectT            Op = 0x1c
	OpLocalGet           Op = 0x20
	OpLocalSet           Op = 0x21
	OpLocalTee           Op = 0x22
	OpGlobalGet          Op = 0x23
	OpGlobalSet          Op = 0x24
	OpTableGet           Op = 0x25
	OpTableSet           Op = 0x26
	OpI32Load            Op = 0x28
	OpI64Store32         Op = 0x3e
	OpMemorySize         Op = 0x3f
	OpMemoryGrow         Op = 0x40
	OpI32Const           Op = 0x41
	OpI64Const           Op = 0x42
	OpF32Const           Op = 0x43
	OpF64Const           Op = 0x44
	OpI32Eqz             Op = 0x45
	OpI32Add             Op = 0x6a
	OpI32Sub             Op = 0x6b
	OpI32Mul             Op = 0x6c
	OpI64LtS             Op = 0x53
	OpI32GtU             Op = 0x4b
	OpI32Eq              Op = 0x46
	OpI64Add             Op = 0x7c
	OpI64Sub             Op = 0x7d
	OpI64Mul             Op = 0x7e
	OpI64Or              Op = 0x84
	OpI64ShrU            Op = 0x88
	OpI64ExtendI32U      Op = 0xad
	OpI64Extend32S       Op = 0xc4
	OpRefNull            Op = 0xd0
	OpRefIsNull          Op = 0xd1
	OpRefFunc            Op = 0xd2

	OpMemoryInit Op = 0xfc08
	OpDataDrop   Op = 0xfc09
	OpMemoryCopy Op = 0xfc0a
	OpMemoryFill Op = 0xfc0b
	OpTableInit  Op = 0xfc0c
	OpElemDrop   Op = 0xfc0d
	OpTableCopy  Op = 0xfc0e
	OpTableGrow  Op = 0xfc0f
	OpTableSize  Op = 0xfc10
	OpTableFill  Op = 0xfc11

	OpV128Const     Op = 0xfd0c
	OpI8x16Shuffle  Op = 0xfd0d
	OpV128Load8Lane Op = 0xfd54
)

var opNames = map[Op]string{
	OpUnreachable: "unreachable", OpNop: "nop", OpBlock: "block", OpLoop: "loop", OpIf: "if",
	OpElse: "else", OpEnd: "end", OpBr: "br", OpBrIf: "br_if", OpBrTable: "br_table",
	OpReturn: "return", OpCall: "call", OpCallIndirect: "call_indirect", OpReturnCall: "return_call",
	OpReturnCallIndirect: "return_call_indirect", OpLocalGet: "local.get", OpLocalSet: "local.set",
	OpLocalTee: "local.tee", OpGlobalGet: "global.get", OpGlobalSet: "global.set",
	OpMemorySize: "memory.size", OpMemoryGrow: "memory.grow", OpI32Const: "i32.const",
	OpI64Const: "i64.const", OpRefFunc: "ref.func", OpMemoryInit: "memory.init",
	OpDataDrop: "data.drop", OpMemoryCopy: "memory.copy", OpMemoryFill: "memory.fill",
	OpTableInit: "table.init", OpElemDrop: "elem.drop", OpTableCopy: "table.copy",
	OpTableGrow: "table.grow", OpTableSize: "table.size", OpTableFill: "table.fill",
	OpTableGet: "table.get", OpTableSet: "table.set",
}

func (o Op) String() string {
	if n, ok := opNames[o]; ok {
		return n
	}
	if o > 0xff {
		return fmt.Sprintf("opcode %#x %#x", byte(o>>8), byte(o))
	}
	return fmt.Sprintf("opcode %#x", byte(o))
}

// BlockEmpty is the BlockType of a block, loop or if without params or
// results.
const BlockEmpty = -64

// Instr is one decoded instruction.
type Instr struct {
	Op  Op
	Pos int // offset of the first opcode byte
	End int // offset after the last immediate
	// Imm is the first index immediate: label (br, br_if), label count
	// (br_table), function (call, return_call, ref.func), type
	// (call_indirect), local, global, table (table.*), data (memory.init,
	// data.drop) or element (table.init, elem.drop) index; the value of
	// i32.const, as its two's complement.
	Imm uint32
	// Imm2 is the second index immediate: table index of call_indirect,
	// table.init and the source table of table.copy; the largest label of
	// br_table.
	Imm2 uint32
	// BlockType of block, loop and if: -64 (0x40) for no result, a negative
	// value type (-1 for i32 ...), or a type index >= 0.
	BlockType int64
}

// invalidSIMD lists the unassigned sub-opcodes below 0x100 of the 0xFD
// prefix; every other one up to 0xFF is a SIMD instruction.
var invalidSIMD = func() (s [256]bool) {
	for _, o := range []byte{0x9a, 0xa2, 0xa5, 0xa6, 0xaf, 0xb0, 0xb2, 0xb3, 0xb4, 0xbb,
		0xc2, 0xc5, 0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2, 0xee} {
		s[o] = true
	}
	return s
}()

// Shapes of the single-byte opcodes Decode takes a short way for.
const (
	shapeOther  byte = iota
	shapeNone        // no immediates
	shapeIndex       // one unsigned LEB128 index
	shapeMemarg      // align and offset
)

// shapes is the shape of each single-byte opcode.
var shapes = func() (s [256]byte) {
	for c := range 256 {
		switch {
		case c == 0x00 || c == 0x01 || c == 0x05 || c == 0x0b || c == 0x0f || c == 0x1a || c == 0x1b ||
			c >= 0x45 && c <= 0xc4 || c == 0xd1:
			s[c] = shapeNone
		case c == 0x0c || c == 0x0d || c == 0x10 || c == 0x12 || c >= 0x20 && c <= 0x26 || c == 0xd2:
			s[c] = shapeIndex
		case c >= 0x28 && c <= 0x3e:
			s[c] = shapeMemarg
		}
	}
	return s
}()

// Decode decodes the instruction at b[pos:]. Errors name the instruction's
// offset. It supports MVP, sign-extension, non-trapping conversions, bulk
// memory, reference types, multi-value, SIMD and tail calls; anything else
// is an error that names the opcode.
func Decode(b []byte, pos int) (Instr, error) {
	// The commonest instructions take a short way (the instrumentation
	// pass decodes every instruction of a module): one without
	// immediates, or whose immediates are each a single LEB128 byte.
	if pos >= 0 && pos+1 < len(b) {
		c := b[pos]
		switch shapes[c] {
		case shapeNone:
			return Instr{Op: Op(c), Pos: pos, End: pos + 1}, nil
		case shapeIndex:
			if b[pos+1] < 0x80 {
				return Instr{Op: Op(c), Pos: pos, End: pos + 2, Imm: uint32(b[pos+1])}, nil
			}
		case shapeMemarg:
			if pos+2 < len(b) && b[pos+1] < 0x40 && b[pos+2] < 0x80 {
				return Instr{Op: Op(c), Pos: pos, End: pos + 3}, nil
			}
		}
	}
	return decode(b, pos)
}

// decode is Decode without its short ways (FuzzDecodeShortWays checks
// that they agree).
func decode(b []byte, pos int) (Instr, error) {
	in := Instr{Pos: pos}
	if pos >= len(b) {
		return in, errAt(pos, "unexpected end of code")
	}
	c := b[pos]
	p := pos + 1
	in.Op = Op(c)
	var ok bool
	u32 := func() uint32 {
		var v uint64
		v, p, ok = readUleb(b, p, 32)
		return uint32(v)
	}
	zero := func() {
		ok = p < len(b) && b[p] == 0
		p++
	}
	memarg := func() {
		var align uint32
		if align = u32(); ok {
			if align >= 0x40 {
				ok = false // multi-memory flag or absurd alignment
				return
			}
			u32()
		}
	}
	ok = true
	switch {
	case shapes[c] == shapeNone:
	case c >= 0x02 && c <= 0x04:
		in.BlockType, p, ok = readSleb(b, p, 33)
		if ok && in.BlockType < 0 && in.BlockType != -64 && !ValidValType(byte(in.BlockType&0x7f)) {
			return in, errAt(pos, "%s: invalid block type %d", in.Op, in.BlockType)
		}
	case shapes[c] == shapeIndex:
		in.Imm = u32()
	case c == 0x0e:
		n := u32()
		in.Imm = n
		for i := uint64(0); ok && i <= uint64(n); i++ {
			if p >= len(b) {
				ok = false
				break
			}
			if l := u32(); l > in.Imm2 {
				in.Imm2 = l
			}
		}
	case c == 0x11 || c == 0x13:
		in.Imm = u32()
		if ok {
			in.Imm2 = u32()
		}
	case c == 0x1c:
		n := u32()
		if ok && n != 1 {
			return in, errAt(pos, "select: %d result types (want 1)", n)
		}
		ok = ok && p < len(b) && ValidValType(b[p])
		p++
	case shapes[c] == shapeMemarg:
		memarg()
	case c == 0x3f || c == 0x40:
		zero()
	case c == 0x41:
		var v int64
		v, p, ok = readSleb(b, p, 32)
		in.Imm = uint32(v)
	case c == 0x42:
		_, p, ok = readSleb(b, p, 64)
	case c == 0x43:
		p += 4
	case c == 0x44:
		p += 8
	case c == 0xd0:
		ok = p < len(b) && (b[p] == byte(FuncRef) || b[p] == byte(ExternRef))
		p++
	case c == 0xfc:
		sub := u32()
		if !ok {
			break
		}
		if sub > 17 {
			return in, errAt(pos, "unknown opcode 0xfc %d", sub)
		}
		in.Op = Op(0xfc00 | sub)
		switch {
		case sub <= 7:
		case sub == 8: // memory.init data mem
			if in.Imm = u32(); ok {
				zero()
			}
		case sub == 9 || sub == 13: // data.drop, elem.drop
			in.Imm = u32()
		case sub == 10: // memory.copy dst src
			if zero(); ok {
				zero()
			}
		case sub == 11: // memory.fill
			zero()
		case sub == 12 || sub == 14: // table.init elem table, table.copy dst src
			if in.Imm = u32(); ok {
				in.Imm2 = u32()
			}
		default: // table.grow/size/fill
			in.Imm = u32()
		}
	case c == 0xfd:
		sub := u32()
		if !ok {
			break
		}
		if sub > 0xff || invalidSIMD[sub] {
			return in, errAt(pos, "unsupported opcode 0xfd %#x (not in the SIMD proposal; relaxed SIMD is not supported)", sub)
		}
		in.Op = Op(0xfd00 | sub)
		switch {
		case sub <= 0x0b || sub == 0x5c || sub == 0x5d:
			memarg()
		case sub == 0x0c || sub == 0x0d:
			p += 16
		case sub >= 0x15 && sub <= 0x22:
			p++
		case sub >= 0x54 && sub <= 0x5b:
			if memarg(); ok {
				p++
			}
		}
	case c == 0xfe:
		return in, errAt(pos, "unsupported opcode 0xfe (threads/atomics)")
	case c >= 0x06 && c <= 0x0a || c == 0x18 || c == 0x19 || c == 0x1f:
		return in, errAt(pos, "unsupported opcode %#x (exception handling)", c)
	case c == 0x14 || c == 0x15 || c >= 0xd3 && c <= 0xd6 || c == 0xfb:
		return in, errAt(pos, "unsupported opcode %#x (typed function references / GC)", c)
	default:
		return in, errAt(pos, "unknown opcode %#x", c)
	}
	if !ok || p > len(b) {
		return in, errAt(pos, "%s: malformed or truncated immediate", in.Op)
	}
	in.End = p
	return in, nil
}

// BrTableLabels calls f with every label of a br_table that Decode
// returned, the default last.
func BrTableLabels(b []byte, in Instr, f func(uint32)) {
	p := in.Pos + 1
	_, p, _ = readUleb(b, p, 32)
	for i := uint32(0); i <= in.Imm; i++ {
		var l uint64
		l, p, _ = readUleb(b, p, 32)
		f(uint32(l))
	}
}
