package instrument

import (
	"slices"

	wb "github.com/warden-run/warden/runtime/internal/wasmbin"
)

// maxDataGap is the longest run of bytes no segment writes that
// mergeData bridges with zeros between two segments of a module-defined
// memory: each segment costs the engine an offset evaluation, a bounds
// check and an allocation at every instantiation. Go's linker ends a
// segment at each run of zeros longer than about 16 bytes, so bridging
// gaps up to 64 bytes turns echo.wasm's 47,348 segments into 16 (32 bytes
// would leave 247), for 0.85 MB of zeros more in the module. It also
// bounds the pass's output: at most 64 zero bytes per input segment beyond
// the bytes the module ships.
const maxDataGap = 64

// dataSegment is an active data segment of mergeData's input.
type dataSegment struct {
	offset uint64 // where it starts in memory
	init   []byte // the bytes it writes (aliasing the input module)
}

// mergeData rewrites the data section of m into as few active segments as
// give the same memory after instantiation, or returns nil when it leaves
// the section as it is.
//
// Go's linker writes one segment per symbol (echo.wasm has 47,348), and
// the engine applies each one at every instantiation: an offset
// evaluation, a bounds check, an allocation and a copy, which was most of
// what making a new session's instance cost. Merging is done only where
// it cannot change any observable behaviour:
//   - every segment is active on memory 0 at an i32.const offset, so the
//     merged layout is known before instantiation (a global.get offset
//     depends on the import), and no code can name a segment by index
//     (memory.init and data.drop need passive or indexed segments, and
//     the data count section they require is checked for too);
//   - every segment lies within the memory's minimum size, so none can
//     trap: a module where one might trap at instantiation keeps its
//     segments and so its trap, with the same message and the same
//     partial writes before it;
//   - later segments overwrite earlier ones where they overlap, as the
//     engine applies them in order;
//   - gaps are bridged with zeros only in a memory the module defines,
//     which is all zeros before its segments are applied; an imported
//     memory has contents of its own, so there only segments that touch
//     or overlap are merged.
func mergeData(m *module, usesDataIndex bool) []byte {
	s := m.Section(wb.SectionData)
	if s == nil || m.memory == nil || usesDataIndex || m.Section(wb.SectionDataCount) != nil {
		return nil
	}
	segs, ok := activeSegments(m.SectionReader(s), uint64(m.memory.Min)*65536)
	if !ok || len(segs) < 2 {
		return nil
	}
	gap := uint64(0)
	if !m.memImported {
		gap = maxDataGap
	}
	// Group segments into runs of memory they cover, each run at least
	// gap+1 bytes from the next; then write each run's bytes by applying
	// its segments in their original order.
	order := make([]int, len(segs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch x, y := segs[a].offset, segs[b].offset; {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	type run struct {
		start, end uint64
		members    []int
	}
	var runs []run
	for _, i := range order {
		sg := segs[i]
		end := sg.offset + uint64(len(sg.init))
		if n := len(runs); n > 0 && sg.offset <= runs[n-1].end+gap {
			r := &runs[n-1]
			r.end = max(r.end, end)
			r.members = append(r.members, i)
			continue
		}
		runs = append(runs, run{start: sg.offset, end: end, members: []int{i}})
	}
	if len(runs) == len(segs) {
		return nil // nothing merges: keep the input's bytes
	}
	var out []byte
	out = wb.AppendU32(out, uint32(len(runs)))
	for _, r := range runs {
		slices.Sort(r.members) // original order: later segments win
		buf := make([]byte, r.end-r.start)
		for _, i := range r.members {
			copy(buf[segs[i].offset-r.start:], segs[i].init)
		}
		out = append(out, 0) // active, memory 0
		out = append(wb.AppendS32(append(out, byte(wb.OpI32Const)), int32(uint32(r.start))), byte(wb.OpEnd))
		out = wb.AppendU32(out, uint32(len(buf)))
		out = append(out, buf...)
	}
	return out
}

// activeSegments reads a data section whose segments are all active on
// memory 0 at i32.const offsets and lie within size bytes; ok is false
// for any other section, including one that does not parse.
func activeSegments(r *wb.Reader, size uint64) (segs []dataSegment, ok bool) {
	n, err := r.Count()
	if err != nil {
		return nil, false
	}
	segs = make([]dataSegment, 0, n)
	for range n {
		flag, err := r.U32()
		if err != nil || flag != 0 {
			return nil, false
		}
		expr, err := r.ConstExpr()
		if err != nil {
			return nil, false
		}
		in, err := wb.Decode(expr, 0)
		if err != nil || in.Op != wb.OpI32Const || in.End != len(expr)-1 {
			return nil, false
		}
		if in.Imm >= 1<<31 {
			return nil, false // an engine may read it as a negative offset
		}
		offset := uint64(in.Imm)
		size32, err := r.U32()
		if err != nil {
			return nil, false
		}
		init, err := r.Bytes(size32)
		if err != nil {
			return nil, false
		}
		if offset+uint64(len(init)) > size {
			return nil, false
		}
		segs = append(segs, dataSegment{offset: offset, init: init})
	}
	if r.End("data section") != nil {
		return nil, false
	}
	return segs, true
}
