package wasmbin

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestLEBRoundTrip(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, 64, -64, -65, 127, 128, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64} {
		b := AppendS64(nil, v)
		got, n, ok := readSleb(b, 0, 64)
		if !ok || got != v || n != len(b) {
			t.Errorf("s64 %d: got %d,%d,%v from %x", v, got, n, ok, b)
		}
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			got, _, ok := readSleb(AppendS32(nil, int32(v)), 0, 32)
			if !ok || got != v {
				t.Errorf("s32 %d: got %d,%v", v, got, ok)
			}
		}
	}
	for _, v := range []uint32{0, 1, 127, 128, 16383, 16384, math.MaxUint32} {
		b := AppendU32(nil, v)
		got, n, ok := readUleb(b, 0, 32)
		if !ok || uint32(got) != v || n != len(b) {
			t.Errorf("u32 %d: got %d,%d,%v", v, got, n, ok)
		}
	}
}

func TestLEBMalformed(t *testing.T) {
	for _, tc := range []struct {
		b      []byte
		bits   uint
		signed bool
	}{
		{[]byte{0x80}, 32, false},                               // truncated
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x1f}, 32, false},       // bits above 32
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 32, false}, // too long
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x4f}, 32, true},        // unused bits not sign
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x70}, 32, true},        // sign 0, unused bits 1
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02}, 64, true},
	} {
		var ok bool
		if tc.signed {
			_, _, ok = readSleb(tc.b, 0, tc.bits)
		} else {
			_, _, ok = readUleb(tc.b, 0, tc.bits)
		}
		if ok {
			t.Errorf("%x (%d bits, signed %v) accepted", tc.b, tc.bits, tc.signed)
		}
	}
	// Non-minimal but in-range encodings are valid.
	if v, _, ok := readSleb([]byte{0xff, 0xff, 0xff, 0xff, 0x7f}, 0, 32); !ok || v != -1 {
		t.Errorf("padded -1: %d %v", v, ok)
	}
	if v, _, ok := readUleb([]byte{0x80, 0x00}, 0, 32); !ok || v != 0 {
		t.Errorf("padded 0: %d %v", v, ok)
	}
}

// TestDecode covers every immediate shape of every supported class.
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name string
		code []byte
		op   Op
		imm  uint32
	}{
		{"unreachable", []byte{0x00}, OpUnreachable, 0},
		{"block empty", []byte{0x02, 0x40}, OpBlock, 0},
		{"loop i32", []byte{0x03, 0x7f}, OpLoop, 0},
		{"if typeidx", []byte{0x04, 0x85, 0x01}, OpIf, 0},
		{"br", []byte{0x0c, 0x03}, OpBr, 3},
		{"br_table", []byte{0x0e, 0x03, 0x00, 0x01, 0x02, 0x80, 0x01}, OpBrTable, 3},
		{"call", []byte{0x10, 0xe5, 0x8e, 0x26}, OpCall, 624485},
		{"call_indirect", []byte{0x11, 0x02, 0x00}, OpCallIndirect, 2},
		{"return_call", []byte{0x12, 0x07}, OpReturnCall, 7},
		{"return_call_indirect", []byte{0x13, 0x01, 0x00}, OpReturnCallIndirect, 1},
		{"select", []byte{0x1b}, OpSelect, 0},
		{"select t", []byte{0x1c, 0x01, 0x7b}, OpSelectT, 0},
		{"local.tee", []byte{0x22, 0x05}, OpLocalTee, 5},
		{"global.set", []byte{0x24, 0x01}, OpGlobalSet, 1},
		{"table.get", []byte{0x25, 0x00}, OpTableGet, 0},
		{"i64.store32", []byte{0x3e, 0x02, 0x80, 0x80, 0x04}, OpI64Store32, 0},
		{"memory.size", []byte{0x3f, 0x00}, OpMemorySize, 0},
		{"memory.grow", []byte{0x40, 0x00}, OpMemoryGrow, 0},
		{"i32.const", []byte{0x41, 0x7f}, OpI32Const, 0xffffffff},
		{"i32.const 77", []byte{0x41, 0xcd, 0x00}, OpI32Const, 77},
		{"i64.const", []byte{0x42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f}, OpI64Const, 0},
		{"f32.const", []byte{0x43, 0, 0, 0x80, 0x3f}, OpF32Const, 0},
		{"f64.const", []byte{0x44, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, OpF64Const, 0},
		{"i64.extend32_s", []byte{0xc4}, OpI64Extend32S, 0},
		{"ref.null", []byte{0xd0, 0x6f}, OpRefNull, 0},
		{"ref.func", []byte{0xd2, 0x04}, OpRefFunc, 4},
		{"i32.trunc_sat_f32_s", []byte{0xfc, 0x00}, 0xfc00, 0},
		{"i64.trunc_sat_f64_u", []byte{0xfc, 0x07}, 0xfc07, 0},
		{"memory.init", []byte{0xfc, 0x08, 0x02, 0x00}, OpMemoryInit, 2},
		{"data.drop", []byte{0xfc, 0x09, 0x02}, OpDataDrop, 2},
		{"memory.copy", []byte{0xfc, 0x0a, 0x00, 0x00}, OpMemoryCopy, 0},
		{"memory.fill", []byte{0xfc, 0x0b, 0x00}, OpMemoryFill, 0},
		{"table.init", []byte{0xfc, 0x0c, 0x01, 0x00}, OpTableInit, 1},
		{"elem.drop", []byte{0xfc, 0x0d, 0x01}, OpElemDrop, 1},
		{"table.copy", []byte{0xfc, 0x0e, 0x00, 0x01}, OpTableCopy, 0},
		{"table.grow", []byte{0xfc, 0x0f, 0x00}, OpTableGrow, 0},
		{"table.size", []byte{0xfc, 0x10, 0x00}, OpTableSize, 0},
		{"table.fill", []byte{0xfc, 0x11, 0x00}, OpTableFill, 0},
		{"v128.load", []byte{0xfd, 0x00, 0x04, 0x10}, 0xfd00, 0},
		{"v128.const", append([]byte{0xfd, 0x0c}, make([]byte, 16)...), OpV128Const, 0},
		{"i8x16.shuffle", append([]byte{0xfd, 0x0d}, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 31), OpI8x16Shuffle, 0},
		{"i8x16.extract_lane_s", []byte{0xfd, 0x15, 0x0f}, 0xfd15, 0},
		{"f64x2.replace_lane", []byte{0xfd, 0x22, 0x01}, 0xfd22, 0},
		{"v128.load8_lane", []byte{0xfd, 0x54, 0x00, 0x00, 0x0f}, OpV128Load8Lane, 0},
		{"v128.store64_lane", []byte{0xfd, 0x5b, 0x03, 0x08, 0x01}, 0xfd5b, 0},
		{"v128.load64_zero", []byte{0xfd, 0x5d, 0x03, 0x00}, 0xfd5d, 0},
		{"i32x4.dot_i16x8_s (2-byte sub)", []byte{0xfd, 0xba, 0x01}, 0xfdba, 0},
		{"f64x2.convert_low_i32x4_u", []byte{0xfd, 0xff, 0x01}, 0xfdff, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Prefix junk so offsets are absolute, and trailing junk to
			// check End stops at the instruction.
			b := append(append([]byte{0xaa, 0xbb}, tc.code...), 0xcc)
			in, err := Decode(b, 2)
			if err != nil {
				t.Fatal(err)
			}
			if in.Op != tc.op || in.Pos != 2 || in.End != 2+len(tc.code) || in.Imm != tc.imm {
				t.Fatalf("got %+v, want op %#x end %d imm %d", in, tc.op, 2+len(tc.code), tc.imm)
			}
			// Every strict prefix is truncated and must be an error.
			for n := 1; n < len(tc.code); n++ {
				if _, err := Decode(b[:2+n], 2); err == nil {
					t.Errorf("prefix of %d bytes decoded", n)
				}
			}
		})
	}
}

func TestDecodeBlockTypes(t *testing.T) {
	for code, want := range map[string]int64{"\x02\x40": -64, "\x02\x7f": -1, "\x02\x7b": -5, "\x02\x70": -16, "\x02\x00": 0, "\x02\x85\x01": 133} {
		in, err := Decode([]byte(code), 0)
		if err != nil || in.BlockType != want {
			t.Errorf("%x: %d %v, want %d", code, in.BlockType, err, want)
		}
	}
	if _, err := Decode([]byte{0x02, 0x60}, 0); err == nil {
		t.Error("block type 0x60 accepted")
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, tc := range []struct {
		code []byte
		want string
	}{
		{[]byte{0xfe, 0x00}, "opcode 0xfe (threads/atomics)"},
		{[]byte{0x06, 0x40}, "exception handling"},
		{[]byte{0x08, 0x00}, "exception handling"},
		{[]byte{0x14, 0x00}, "typed function references"},
		{[]byte{0xfb, 0x00}, "GC"},
		{[]byte{0x27}, "unknown opcode 0x27"},
		{[]byte{0xc5}, "unknown opcode 0xc5"},
		{[]byte{0xff}, "unknown opcode 0xff"},
		{[]byte{0xfc, 0x12}, "unknown opcode 0xfc 18"},
		{[]byte{0xfd, 0x9a, 0x01}, "0xfd 0x9a"},
		{[]byte{0xfd, 0x80, 0x02}, "0xfd 0x100"},       // relaxed SIMD
		{[]byte{0x3f, 0x01}, "memory.size: malformed"}, // multi-memory index
		{[]byte{0x28, 0x40, 0x00, 0x00}, "malformed"},  // multi-memory memarg flag
		{[]byte{0x1c, 0x02, 0x7f, 0x7f}, "select: 2 result types"},
		{[]byte{0xd0, 0x7f}, "malformed"},
	} {
		b := append([]byte{0, 0, 0}, tc.code...)
		_, err := Decode(b, 3)
		var we *Error
		if !errors.As(err, &we) || we.Offset != 3 || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "offset 0x3") {
			t.Errorf("%x: got %v, want %q at offset 3", tc.code, err, tc.want)
		}
	}
}

func TestParseAndSetSection(t *testing.T) {
	// type, custom "a", code(empty vector), custom "b"
	mod := append(append([]byte{}, header...),
		1, 1, 0,
		0, 2, 1, 'a',
		10, 1, 0,
		0, 2, 1, 'b')
	m, err := Parse(mod)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(m.Encode()); got != string(mod) {
		t.Fatalf("round trip changed the module:\n%x\n%x", got, mod)
	}
	m.SetSection(SectionGlobal, []byte{0})
	m.SetSection(SectionDataCount, []byte{0})
	var ids []byte
	for _, s := range m.Sections {
		ids = append(ids, s.ID)
	}
	if string(ids) != string([]byte{1, 0, 6, 12, 10, 0}) { // new ones right before code
		t.Fatalf("section order %v", ids)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"magic", []byte("\x00asm\x02\x00\x00\x00"), "version"},
		{"truncated section", append(append([]byte{}, header...), 1, 5, 0), "offset 0x8: section 1: size 5 exceeds"},
		{"order", append(append([]byte{}, header...), 10, 1, 0, 1, 1, 0), "offset 0xb: section 1 out of order"},
		{"unknown id", append(append([]byte{}, header...), 14, 0), "unknown section id 14"},
		{"tag", append(append([]byte{}, header...), 13, 1, 0), "tag section"},
		{"bad size", append(append([]byte{}, header...), 1, 0x80), "offset 0x9: malformed size"},
	} {
		if _, err := Parse(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

// importSection encodes one function import module.name of type 0.
func importSection(module, name string) []byte {
	return append(AppendName(AppendName([]byte{1}, module), name), KindFunc, 0)
}

func TestImportsDecodedOnceUntilReplaced(t *testing.T) {
	imp := importSection("m", "f")
	mod := append(append(append([]byte{}, header...), 1, 4, 1, 0x60, 0, 0, SectionImport, byte(len(imp))), imp...)
	m, err := Parse(mod)
	if err != nil {
		t.Fatal(err)
	}
	first, err := m.Imports()
	if err != nil || len(first) != 1 || first[0].Module != "m" || first[0].Name != "f" {
		t.Fatalf("imports %+v, %v", first, err)
	}
	if again, _ := m.Imports(); &again[0] != &first[0] {
		t.Fatal("imports decoded twice")
	}
	// A replaced section is decoded from its new payload, positions
	// relative to it.
	m.SetSection(SectionImport, importSection("n", "g"))
	got, err := m.Imports()
	if err != nil || len(got) != 1 || got[0].Module != "n" || got[0].Name != "g" {
		t.Fatalf("after SetSection: imports %+v, %v", got, err)
	}
	m.SetSection(SectionImport, []byte{1, 1}) // truncated
	if _, err := m.Imports(); err == nil {
		t.Fatal("a truncated replaced import section decoded")
	}
	m.RemoveSection(SectionImport)
	if got, err := m.Imports(); got != nil || err != nil {
		t.Fatalf("after RemoveSection: %+v, %v", got, err)
	}
}

// FuzzDecodeShortWays checks that Decode's short ways for the commonest
// instructions decode every input as its general path (decode) does: the
// same instruction, immediates and end, or the same error.
func FuzzDecodeShortWays(f *testing.F) {
	for _, seed := range [][]byte{
		{0x20, 0x05}, {0x20, 0x85, 0x01}, {0x20}, {0x21, 0x7f}, {0xd2, 0x00},
		{0x28, 0x02, 0x10}, {0x28, 0x02}, {0x28, 0x40, 0x00}, {0x36, 0x3f, 0x80, 0x01},
		{0x6a}, {0x0b}, {0x10, 0x80}, {0x0c, 0x00}, {0x41, 0x7f}, {0xfc, 0x0a, 0x00, 0x00},
	} {
		f.Add(seed, uint8(0))
	}
	f.Fuzz(func(t *testing.T, b []byte, at uint8) {
		pos := int(at) % (len(b) + 1)
		got, gotErr := Decode(b, pos)
		want, wantErr := decode(b, pos)
		if got != want || (gotErr == nil) != (wantErr == nil) ||
			gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("Decode(% x, %d) = %+v, %v; the general path: %+v, %v", b, pos, got, gotErr, want, wantErr)
		}
	})
}

// TestDecodeShortWaysCover checks that the short ways are taken for what
// they are meant for (so that FuzzDecodeShortWays compares something):
// every opcode of each shape with one-byte immediates.
func TestDecodeShortWaysCover(t *testing.T) {
	counts := map[byte]int{}
	for c := range 256 {
		shape := shapes[c]
		counts[shape]++
		code := []byte{byte(c), 0x05, 0x07}
		got, err := Decode(code, 0)
		want, wantErr := decode(code, 0)
		if shape != shapeOther && (err != nil || got != want) {
			t.Errorf("opcode %#x (shape %d): Decode %+v, %v; the general path %+v, %v", c, shape, got, err, want, wantErr)
		}
	}
	// The counts of each shape: a change to the table shows here.
	if counts[shapeNone] != 136 || counts[shapeIndex] != 12 || counts[shapeMemarg] != 23 {
		t.Errorf("shapes: %d without immediates, %d with an index, %d with a memarg; want 136, 12, 23",
			counts[shapeNone], counts[shapeIndex], counts[shapeMemarg])
	}
}
