package instrument

import (
	"fmt"
	"slices"

	wb "github.com/warden-run/warden/runtime/internal/wasmbin"
)

// pass holds the state of one Instrument call; the slices are scratch
// reused across function bodies.
type pass struct {
	m      *module
	cfg    Config
	res    *Result
	nTypes uint32 // types of the original module; newTypes come after

	newTypes             []wb.FuncType
	fuel, reserve        uint32 // global indices
	depth, pages         uint32
	grow, refill         uint32 // appended functions: memory.grow, fuel refill
	virtual, rewriteGrow bool
	ownMemory            bool   // the pass adds a memory (for refill's memory.grow)
	l64, l32             uint32 // scratch locals of the current body
	weight               int32  // what the current body's frame counts towards the depth
	insts                []wb.Instr
	segs                 []segment
	ctl                  []frame
	out                  []byte

	// Dispatch loops of the current body (see noteJump).
	dispatches  []dispatch // indexed by frame.dispatch-1
	dispTargets []int32    // every dispatch's table, as block numbers
	jumps       []jump     // forward dispatch jumps, in order: sent straight to their target
	backs       []jump     // backward dispatch jumps
	falls       []bool     // per dispatch region (dispatch.regions): it falls through into the next
	dropJump    []bool     // scratch of keepJumps
	grouped     []int32    // the jumps by dispatch (groupJumps)
	groupStart  []int32
	groupNext   []int32
	graph       regionGraph
	loops       loops
}

// A dispatch is a loop that starts by branching on a local: its body
// begins with blocks, then local.get and br_table, so that a branch to
// the loop with a known value in the local lands at a known block end.
// Go compiles every function into one (its jumps set the local and
// branch to the loop). The blocks are numbered from the innermost, whose
// end comes first, so block t is open until the walk has passed t ends.
type dispatch struct {
	local  uint32
	blocks int // how many blocks the body begins with
	closed int // how many of them the walk has passed the end of
	// The table is dispTargets[first:first+n]: per entry (the default
	// last) the number of the block it ends, or -1 if the label is not
	// one of the dispatch's blocks.
	first, n int
	// Region r's entry in pass.falls is falls[regions+r].
	regions int
}

// A jump is a dispatch jump at insts[inst], from region from of dispatch
// d to region to (the code after the end of block to-1); label is the
// block end's label for a forward jump.
type jump struct {
	inst     int
	label    uint32
	d        int32
	from, to int32
}

// A segment is code whose cost is charged at one point, the instruction
// index `after` which the charge goes (-1: function entry). Charge points
// are the places control can reach other than by falling through from
// code that was already charged: function entry, loop headers, the start
// of then and else branches, and the end of a block or if that a branch
// targets. Code after the end of a construct no branch targets resumes the
// segment that was open before the construct: whenever that code runs, the
// construct's first instruction ran after the same charge. A segment is
// overcharged only when control leaves it early (a branch outwards, a
// return or a trap). check says whether to test the fuel at the charge
// point: at loop headers, and at the entry of a function that calls,
// which every unbounded execution passes through.
type segment struct {
	after int
	cost  int64
	check bool
}

// frame is an open construct during the walk.
type frame struct {
	kind     byte
	dispatch int32 // a loop's or a dispatch block's dispatch: index+1 in pass.dispatches, or 0
	outer    int   // segment open before the construct
	deadOut  bool  // whether the code before it was unreachable
	targeted bool  // a branch targets its end (blocks and ifs)
	thenDead bool  // an if's then branch ended unreachable
}

const (
	ctlFunc byte = iota
	ctlBlock
	ctlLoop
	ctlIf
	ctlElse
)

func (p *pass) changesBodies() bool {
	return p.cfg.Fuel || p.cfg.MaxCallDepth > 0 || p.rewriteGrow
}

// rewriteCode walks every body (to validate indices and collect flags) and
// returns the new code section payload, or nil if bodies stay unchanged.
func (p *pass) rewriteCode() ([]byte, error) {
	m := p.m
	change := p.changesBodies() && len(m.codes) > 0
	var out []byte
	if change {
		s := m.Section(wb.SectionCode)
		out = make([]byte, 0, len(s.Payload)+len(s.Payload)/3+64)
		out = wb.AppendU32(out, uint32(len(m.codes)))
	}
	for i, c := range m.codes {
		fn := m.importedFuncs + uint32(i)
		if err := p.walk(c, m.funcTypes[fn]); err != nil {
			return nil, fmt.Errorf("function %d: %w", fn, err)
		}
		if change {
			p.res.DirectJumps += len(p.jumps)
			body := p.emit(c, m.funcTypes[fn])
			out = wb.AppendU32(out, uint32(len(body)))
			out = append(out, body...)
		}
	}
	return out, nil
}

// walk decodes a body into p.insts and its fuel segments into p.segs,
// checking the structure and the index immediates the rewrite relies on.
func (p *pass) walk(c wb.Code, typeIdx uint32) error {
	m := p.m
	lim := p.cfg.Limits
	loops := uint32(0) // open loops
	if size := c.End - c.Start; uint64(size) > uint64(lim.MaxBodyBytes) {
		return fmt.Errorf("body is %d bytes, over the limit of %d", size, lim.MaxBodyBytes)
	}
	b := m.Bytes[:c.End]
	r := wb.NewReader(b, c.Start, c.End)
	_, nDecl, err := r.Locals()
	if err != nil {
		return err
	}
	nLocals := uint64(len(m.types[typeIdx].Params)) + nDecl
	if nLocals > uint64(lim.MaxLocals) {
		return fmt.Errorf("%d locals, over the limit of %d", nLocals, lim.MaxLocals)
	}
	p.l64, p.l32 = uint32(nLocals), uint32(nLocals)+1
	p.weight = frameWeight(nLocals)
	nFuncs, nGlobals := uint32(len(m.funcTypes)), uint32(len(m.globals))

	p.insts, p.segs, p.ctl = p.insts[:0], p.segs[:0], p.ctl[:0]
	p.dispatches, p.dispTargets, p.jumps, p.backs, p.falls = p.dispatches[:0], p.dispTargets[:0], p.jumps[:0], p.backs[:0], p.falls[:0]
	p.segs = append(p.segs, segment{after: -1, check: true})
	p.ctl = append(p.ctl, frame{kind: ctlFunc})
	cur, dead := 0, false // open segment; whether the code here is unreachable
	calls := false        // the body calls (directly, indirectly or by tail call)
	// prologue: no control flow or call since the entry. A loop reached
	// that way checks the fuel right after the entry charge, which then
	// needs no check of its own (Go wraps every function in such a loop).
	prologue := true
	open := func(idx int, check bool) {
		p.segs = append(p.segs, segment{after: idx, check: check})
		cur, dead = len(p.segs)-1, false
	}
	target := func(label uint32) { p.ctl[len(p.ctl)-1-int(label)].targeted = true }
	pos := r.Pos()
	for {
		in, err := wb.Decode(b, pos)
		if err != nil {
			return err
		}
		pos = in.End
		idx := len(p.insts)
		p.insts = append(p.insts, in)
		cost, stops := int64(1), false
		bad := func(what string, v, n uint32) error {
			return &wb.Error{Offset: in.Pos, Msg: fmt.Sprintf("%s: %s %d out of range (%d)", in.Op, what, v, n)}
		}
		switch in.Op {
		case wb.OpBlock, wb.OpLoop, wb.OpIf:
			if in.BlockType >= 0 && uint64(in.BlockType) >= uint64(p.nTypes) {
				return bad("type", uint32(in.BlockType), p.nTypes)
			}
			if depth := uint32(len(p.ctl)); depth > lim.MaxNesting {
				return &wb.Error{Offset: in.Pos, Msg: fmt.Sprintf("control nesting %d, over the limit of %d", depth, lim.MaxNesting)}
			} else if depth > p.res.Deepest {
				p.res.Deepest = depth
			}
			f := frame{outer: cur, deadOut: dead}
			switch in.Op {
			case wb.OpBlock:
				f.kind = ctlBlock
				p.ctl = append(p.ctl, f)
				continue // costs nothing, stays in the open segment
			case wb.OpLoop:
				if loops++; loops > lim.MaxLoopNesting {
					return &wb.Error{Offset: in.Pos, Msg: fmt.Sprintf("loop nesting %d, over the limit of %d", loops, lim.MaxLoopNesting)}
				}
				f.kind = ctlLoop
				p.ctl = append(p.ctl, f)
				open(idx, true)
				if prologue {
					// Charge the prologue with the loop's first pass: one
					// charge and check per call instead of two (a Go
					// function's own code costs a few units more per
					// iteration of its dispatch loop).
					p.segs[len(p.segs)-1].cost, p.segs[0] = p.segs[0].cost, segment{after: -1}
					prologue = false
				}
				continue
			}
			prologue = false
			f.kind = ctlIf
			p.ctl = append(p.ctl, f)
			if !dead {
				p.segs[cur].cost++ // the if itself runs before its branches
			}
			open(idx, false)
			continue
		case wb.OpElse:
			prologue = false
			f := &p.ctl[len(p.ctl)-1]
			if f.kind != ctlIf {
				return &wb.Error{Offset: in.Pos, Msg: "else without if"}
			}
			f.kind, f.thenDead = ctlElse, dead
			open(idx, false)
			continue
		case wb.OpEnd:
			prologue = false
			f := p.ctl[len(p.ctl)-1]
			p.ctl = p.ctl[:len(p.ctl)-1]
			if f.kind == ctlLoop {
				loops--
			} else if f.dispatch != 0 {
				d := &p.dispatches[f.dispatch-1]
				p.falls[d.regions+d.closed] = !dead
				d.closed++
			}
			switch {
			case f.kind == ctlFunc:
				if pos != c.End {
					return &wb.Error{Offset: pos, Msg: "bytes after the end of the function body"}
				}
				p.keepJumps()
				if !calls {
					// Without calls the body cannot recurse: every
					// unbounded execution of it passes a loop header,
					// which checks. A leaf's entry only charges.
					p.segs[0].check = false
				}
				return nil
			case f.targeted && f.kind != ctlLoop:
				open(idx, false)
			default:
				// Reached only by falling through (from the construct, or
				// past an if without else): resume the outer segment.
				// After a block or loop whose end is unreachable, or an
				// if/else both of whose branches are, nothing runs.
				endDead := dead && (f.kind != ctlIf) && (f.kind != ctlElse || f.thenDead)
				cur, dead = f.outer, f.deadOut || endDead
			}
			continue
		case wb.OpBr, wb.OpBrIf:
			if in.Imm >= uint32(len(p.ctl)) {
				return bad("label", in.Imm, uint32(len(p.ctl)))
			}
			if in.Op == wb.OpBr {
				p.noteJump(idx)
			}
			target(in.Imm)
			stops = in.Op == wb.OpBr
		case wb.OpBrTable:
			if in.Imm2 >= uint32(len(p.ctl)) {
				return bad("label", in.Imm2, uint32(len(p.ctl)))
			}
			if n := uint64(in.Imm) + 1; n > uint64(lim.MaxBrTableTargets) {
				return &wb.Error{Offset: in.Pos, Msg: fmt.Sprintf("br_table of %d targets, over the limit of %d", n, lim.MaxBrTableTargets)}
			}
			wb.BrTableLabels(b, in, target)
			p.noteDispatch(b, idx)
			stops = true
		case wb.OpReturn, wb.OpUnreachable:
			stops = true
		case wb.OpCall, wb.OpReturnCall, wb.OpRefFunc:
			if in.Imm >= nFuncs {
				return bad("function", in.Imm, nFuncs)
			}
			stops = in.Op == wb.OpReturnCall
			calls = calls || in.Op != wb.OpRefFunc
		case wb.OpCallIndirect, wb.OpReturnCallIndirect:
			if in.Imm >= p.nTypes {
				return bad("type", in.Imm, p.nTypes)
			}
			stops = in.Op == wb.OpReturnCallIndirect
			calls = true
		case wb.OpLocalGet, wb.OpLocalSet, wb.OpLocalTee:
			if uint64(in.Imm) >= nLocals {
				return bad("local", in.Imm, uint32(nLocals))
			}
		case wb.OpGlobalGet, wb.OpGlobalSet:
			if in.Imm >= nGlobals {
				return bad("global", in.Imm, nGlobals)
			}
		case wb.OpMemorySize, wb.OpMemoryGrow, wb.OpMemoryCopy, wb.OpMemoryFill, wb.OpMemoryInit:
			if m.memory == nil {
				return &wb.Error{Offset: in.Pos, Msg: fmt.Sprintf("%s without a memory", in.Op)}
			}
		case wb.OpTableSet, wb.OpTableGrow, wb.OpTableFill, wb.OpTableCopy, wb.OpTableInit, wb.OpElemDrop:
			p.res.MutatesTables = true
		case wb.OpDataDrop:
			p.res.DropsData = true
		case wb.OpNop:
			cost = 0
		}
		if !dead {
			p.segs[cur].cost += cost
		}
		switch in.Op {
		case wb.OpBr, wb.OpBrIf, wb.OpBrTable, wb.OpReturn, wb.OpUnreachable, wb.OpCall, wb.OpCallIndirect,
			wb.OpReturnCall, wb.OpReturnCallIndirect:
			prologue = false
		}
		if stops {
			dead = true // the rest up to the next charge point never runs
		}
		if pos >= c.End {
			return &wb.Error{Offset: c.End, Msg: "function body ends without end"}
		}
	}
}

// emit writes the instrumented body of the function p.walk just read.
//
// With fuel, the body keeps the fuel in its scratch i64 local (a register
// in compiled code) instead of the global (a memory access): it loads the
// global at entry, charges its segments against the local, and stores the
// local back to the global (a spill) wherever another party may read or
// write it: before every call (host functions charge through the global,
// callees load it), before every return and at the end of the body, and
// before bulk operations; after a call it loads the global again. The
// refill function also stores it. A loop header checks only the local.
func (p *pass) emit(c wb.Code, typeIdx uint32) []byte {
	m := p.m
	b := m.Bytes
	o := p.out[:0]
	if p.cfg.ablate&(countCharges|countChecks) != 0 {
		for i := range p.segs {
			if p.cfg.ablate&countCharges != 0 {
				p.segs[i].cost = 1
			} else if p.segs[i].check {
				p.segs[i].cost = 1
			} else {
				p.segs[i].cost = 0
			}
		}
	}
	scratch := p.cfg.Fuel || p.cfg.MaxCallDepth > 0
	first := p.insts[0].Pos // end of local declarations
	if scratch {
		r := wb.NewReader(b, c.Start, c.End)
		n, _ := r.U32()
		o = wb.AppendU32(o, n+2)
		o = append(o, b[r.Pos():first]...)
		o = append(o, 1, byte(wb.I64), 1, byte(wb.I32))
	} else {
		o = append(o, b[c.Start:first]...)
	}
	if p.cfg.MaxCallDepth > 0 {
		o = p.depthEnter(o)
	}
	o = p.chargeEntry(o, p.segs[0])
	if scratch {
		// Wrap the body in a block of the function's results, so that
		// every branch to the function's label (a return in disguise)
		// lands on the spill and the depth decrement below.
		o = append(o, byte(wb.OpBlock))
		o = p.blockType(o, m.types[typeIdx].Results)
	}
	si, ji, last := 1, 0, len(p.insts)-1
	for i, in := range p.insts {
		switch in.Op {
		case wb.OpBr:
			if ji < len(p.jumps) && p.jumps[ji].inst == i {
				o = op32(o, wb.OpBr, p.jumps[ji].label)
				ji++
			} else {
				o = append(o, b[in.Pos:in.End]...)
			}
		case wb.OpReturn, wb.OpReturnCall, wb.OpReturnCallIndirect:
			o = p.spill(o)
			if p.cfg.MaxCallDepth > 0 {
				o = p.depthExit(o)
			}
			o = append(o, b[in.Pos:in.End]...)
		case wb.OpCall, wb.OpCallIndirect:
			o = p.spill(o)
			o = append(o, b[in.Pos:in.End]...)
			o = p.reload(o)
		case wb.OpMemorySize:
			if p.virtual {
				o = op32(o, wb.OpGlobalGet, p.pages)
			} else {
				o = append(o, b[in.Pos:in.End]...)
			}
		case wb.OpMemoryGrow:
			if p.rewriteGrow {
				// The grow function charges the global.
				o = p.spill(o)
				o = op32(o, wb.OpCall, p.grow)
				o = p.reload(o)
			} else {
				o = append(o, b[in.Pos:in.End]...)
			}
		case wb.OpMemoryCopy, wb.OpMemoryFill, wb.OpMemoryInit:
			if p.cfg.Fuel {
				o = p.chargeOperand(o, bulkShift)
			}
			o = append(o, b[in.Pos:in.End]...)
		case wb.OpTableCopy, wb.OpTableFill, wb.OpTableInit, wb.OpTableGrow:
			if p.cfg.Fuel {
				o = p.chargeOperand(o, 0)
			}
			o = append(o, b[in.Pos:in.End]...)
		default:
			o = append(o, b[in.Pos:in.End]...)
		}
		if i == last {
			if scratch {
				// The copied end closed the wrapper block.
				o = p.spill(o)
				if p.cfg.MaxCallDepth > 0 {
					o = p.depthExit(o)
				}
				o = append(o, byte(wb.OpEnd))
			}
			break
		}
		for si < len(p.segs) && p.segs[si].after == i {
			o = p.charge(o, p.segs[si])
			si++
		}
	}
	p.out = o
	return o
}

func (p *pass) blockType(o []byte, results []wb.ValType) []byte {
	switch len(results) {
	case 0:
		return append(o, 0x40)
	case 1:
		return append(o, byte(results[0]))
	}
	return wb.AppendS64(o, int64(p.typeIndex(wb.FuncType{Results: results})))
}

func op32(o []byte, op wb.Op, v uint32) []byte {
	return wb.AppendU32(append(o, byte(op)), v)
}

func i64Const(o []byte, v int64) []byte {
	return wb.AppendS64(append(o, byte(wb.OpI64Const)), v)
}

func i32Const(o []byte, v int32) []byte {
	return wb.AppendS32(append(o, byte(wb.OpI32Const)), v)
}

// trapIf traps if the i32 on the stack is non-zero.
func trapIf(o []byte) []byte {
	return append(o, byte(wb.OpIf), 0x40, byte(wb.OpUnreachable), byte(wb.OpEnd))
}

// chargeEntry loads the fuel global into the body's fuel local, less
// s.cost, and if s.check calls the refill function when the result is
// negative. If s.cost is not zero it spills the result, so that a trap
// in the body reports at least the entry's charge.
func (p *pass) chargeEntry(o []byte, s segment) []byte {
	if !p.cfg.Fuel || p.cfg.structureOnly {
		return o
	}
	s.check = s.check && p.cfg.ablate&ablateChecks == 0
	o = op32(o, wb.OpGlobalGet, p.fuel)
	if s.cost == 0 {
		o = op32(o, wb.OpLocalSet, p.l64)
	} else {
		o = i64Const(o, s.cost)
		o = append(o, byte(wb.OpI64Sub))
		o = op32(o, wb.OpLocalTee, p.l64)
		o = op32(o, wb.OpGlobalSet, p.fuel)
	}
	if !s.check {
		return o
	}
	o = op32(o, wb.OpLocalGet, p.l64)
	o = i64Const(o, 0)
	o = append(o, byte(wb.OpI64LtS))
	return p.refillIf(o)
}

// charge subtracts s.cost from the fuel local and, if s.check (a loop
// header), calls the refill function when the result is negative. The
// check reads only the local: the watchdog's interrupt reaches a loop
// through the reserve, at the next refill (see refillBody), and every
// function entry through the global.
func (p *pass) charge(o []byte, s segment) []byte {
	s.check = s.check && p.cfg.ablate&ablateChecks == 0
	if !p.cfg.Fuel || p.cfg.structureOnly || s.cost == 0 && !s.check {
		return o
	}
	o = op32(o, wb.OpLocalGet, p.l64)
	if s.cost != 0 {
		o = i64Const(o, s.cost)
		o = append(o, byte(wb.OpI64Sub))
		if !s.check {
			return op32(o, wb.OpLocalSet, p.l64)
		}
		o = op32(o, wb.OpLocalTee, p.l64)
	}
	o = i64Const(o, 0)
	o = append(o, byte(wb.OpI64LtS))
	return p.refillIf(o)
}

// spill stores the fuel local to the fuel global.
func (p *pass) spill(o []byte) []byte {
	if !p.cfg.Fuel || p.cfg.structureOnly || p.cfg.ablate&ablateSpills != 0 {
		return o
	}
	o = op32(o, wb.OpLocalGet, p.l64)
	return op32(o, wb.OpGlobalSet, p.fuel)
}

// reload loads the fuel global into the fuel local.
func (p *pass) reload(o []byte) []byte {
	if !p.cfg.Fuel || p.cfg.structureOnly || p.cfg.ablate&ablateSpills != 0 {
		return o
	}
	o = op32(o, wb.OpGlobalGet, p.fuel)
	return op32(o, wb.OpLocalSet, p.l64)
}

// refillIf, if the i32 on the stack is non-zero, passes the fuel local to
// the refill function and sets it to what that returns.
func (p *pass) refillIf(o []byte) []byte {
	o = append(o, byte(wb.OpIf), 0x40)
	o = op32(o, wb.OpLocalGet, p.l64)
	o = op32(o, wb.OpCall, p.refill)
	o = op32(o, wb.OpLocalSet, p.l64)
	return append(o, byte(wb.OpEnd))
}

// refillBody is the function a check calls with the caller's fuel local
// when it or the fuel global is negative; it returns the caller's new fuel
// local. It stores the fuel to the global, keeping the watchdog's offset
// if the global carries it, then traps if fuel plus reserve is negative
// (out of fuel, or interrupted by the watchdog), else it moves up to
// FuelSlice from the reserve into the fuel. On the way it runs
// memory.grow 0, which wazero's compiler implements in Go: the Go runtime
// can preempt the goroutine there (a stop-the-world for GC, or a single P
// the watchdog needs), which it cannot do while compiled guest code runs.
func (p *pass) refillBody() []byte {
	const fuel, total = 0, 1
	o := []byte{1, 1, byte(wb.I64)}
	// if the global is interrupted: fuel -= interruptOffset
	o = op32(o, wb.OpGlobalGet, p.fuel)
	o = i64Const(o, -interruptOffset/2)
	o = append(o, byte(wb.OpI64LtS))
	o = ifThen(o)
	o = op32(o, wb.OpLocalGet, fuel)
	o = i64Const(o, interruptOffset)
	o = append(o, byte(wb.OpI64Sub))
	o = op32(o, wb.OpLocalSet, fuel)
	o = append(o, byte(wb.OpEnd))
	o = op32(o, wb.OpLocalGet, fuel)
	o = op32(o, wb.OpGlobalSet, p.fuel)
	o = op32(o, wb.OpGlobalGet, p.reserve)
	o = op32(o, wb.OpLocalGet, fuel)
	o = append(o, byte(wb.OpI64Add))
	o = op32(o, wb.OpLocalTee, total)
	o = i64Const(o, 0)
	o = append(o, byte(wb.OpI64LtS))
	o = trapIf(o)
	if p.m.memory != nil || p.ownMemory {
		o = i32Const(o, 0)
		o = append(o, byte(wb.OpMemoryGrow), 0, byte(wb.OpDrop))
	}
	// fuel = min(total, FuelSlice); reserve = total - fuel
	o = op32(o, wb.OpLocalGet, total)
	o = i64Const(o, FuelSlice)
	o = op32(o, wb.OpLocalGet, total)
	o = i64Const(o, FuelSlice)
	o = append(o, byte(wb.OpI64LtS), byte(wb.OpSelect))
	o = op32(o, wb.OpLocalTee, fuel)
	o = op32(o, wb.OpGlobalSet, p.fuel)
	o = op32(o, wb.OpLocalGet, total)
	o = op32(o, wb.OpLocalGet, fuel)
	o = append(o, byte(wb.OpI64Sub))
	o = op32(o, wb.OpGlobalSet, p.reserve)
	o = op32(o, wb.OpLocalGet, fuel)
	return append(o, byte(wb.OpEnd))
}

// chargeOperand charges the i32 size operand on top of the stack, shifted
// right by shift, to the fuel local, leaving the stack as it was, and
// traps if that exhausts the fuel: the check comes before the operation
// runs. It spills the fuel, so that an operation that traps (out of
// bounds) reports its charge.
func (p *pass) chargeOperand(o []byte, shift int64) []byte {
	if p.cfg.structureOnly {
		return o
	}
	o = op32(o, wb.OpLocalSet, p.l32)
	o = op32(o, wb.OpLocalGet, p.l64)
	o = op32(o, wb.OpLocalGet, p.l32)
	o = append(o, byte(wb.OpI64ExtendI32U))
	if shift != 0 {
		o = i64Const(o, shift)
		o = append(o, byte(wb.OpI64ShrU))
	}
	o = append(o, byte(wb.OpI64Sub))
	o = op32(o, wb.OpLocalTee, p.l64)
	o = i64Const(o, 0)
	o = append(o, byte(wb.OpI64LtS))
	o = p.refillIf(o)
	o = p.spill(o)
	return op32(o, wb.OpLocalGet, p.l32)
}

// frameWeight is what a frame with n params and locals adds to the call
// depth: 1 plus 1 per 16 locals, so that the bound limits the engine's
// stack in bytes (a frame spills its locals) and not just in frames.
func frameWeight(n uint64) int32 { return int32(1 + n/16) }

func (p *pass) depthEnter(o []byte) []byte {
	o = op32(o, wb.OpGlobalGet, p.depth)
	o = i32Const(o, p.weight)
	o = append(o, byte(wb.OpI32Add))
	o = op32(o, wb.OpLocalTee, p.l32)
	o = op32(o, wb.OpGlobalSet, p.depth)
	o = op32(o, wb.OpLocalGet, p.l32)
	o = i32Const(o, int32(p.cfg.MaxCallDepth))
	o = append(o, byte(wb.OpI32GtU))
	return trapIf(o)
}

func (p *pass) depthExit(o []byte) []byte {
	o = op32(o, wb.OpGlobalGet, p.depth)
	o = i32Const(o, p.weight)
	o = append(o, byte(wb.OpI32Sub))
	return op32(o, wb.OpGlobalSet, p.depth)
}

// growBody is the function that replaces memory.grow: (delta i32) -> i32,
// returning the old size or -1 exactly like memory.grow. With virtual
// memory it grows the real memory only past its current size and
// otherwise just moves the page count; with fuel it charges PageFuel per
// page on success (never on failure, so probing with a huge delta costs
// nothing, as it costs the engine nothing).
func (p *pass) growBody() []byte {
	const d, old, nw = 0, 1, 2
	var o []byte
	mem0 := func(op wb.Op) { o = append(o, byte(op), 0) }
	fuel := func() {
		if !p.cfg.Fuel {
			return
		}
		o = op32(o, wb.OpGlobalGet, p.fuel)
		o = op32(o, wb.OpLocalGet, d)
		o = append(o, byte(wb.OpI64ExtendI32U))
		o = i64Const(o, PageFuel)
		o = append(o, byte(wb.OpI64Mul), byte(wb.OpI64Sub))
		o = op32(o, wb.OpGlobalSet, p.fuel)
	}
	retNeg := func() { o = append(ifThen(o), byte(wb.OpI32Const), 0x7f, byte(wb.OpReturn), byte(wb.OpEnd)) }
	if !p.virtual {
		o = append(o, 1, 1, byte(wb.I32))
		o = op32(o, wb.OpLocalGet, d)
		mem0(wb.OpMemoryGrow)
		o = op32(o, wb.OpLocalTee, old)
		o = i32Const(o, -1)
		o = append(o, 0x47, byte(wb.OpIf), 0x40) // i32.ne
		fuel()
		o = append(o, byte(wb.OpEnd))
		o = op32(o, wb.OpLocalGet, old)
		return append(o, byte(wb.OpEnd))
	}
	max := uint32(65536)
	if p.m.memory.HasMax {
		max = p.m.memory.Max
	}
	o = append(o, 1, 2, byte(wb.I32))
	o = op32(o, wb.OpGlobalGet, p.pages)
	o = op32(o, wb.OpLocalSet, old)
	// if d > max-old: -1 (old <= max always holds)
	o = op32(o, wb.OpLocalGet, d)
	o = i32Const(o, int32(max))
	o = op32(o, wb.OpLocalGet, old)
	o = append(o, byte(wb.OpI32Sub), byte(wb.OpI32GtU))
	retNeg()
	// new = old+d; if new > real size: grow the real memory by the rest.
	o = op32(o, wb.OpLocalGet, old)
	o = op32(o, wb.OpLocalGet, d)
	o = append(o, byte(wb.OpI32Add))
	o = op32(o, wb.OpLocalTee, nw)
	mem0(wb.OpMemorySize)
	o = append(o, byte(wb.OpI32GtU), byte(wb.OpIf), 0x40)
	o = op32(o, wb.OpLocalGet, nw)
	mem0(wb.OpMemorySize)
	o = append(o, byte(wb.OpI32Sub))
	mem0(wb.OpMemoryGrow)
	o = i32Const(o, -1)
	o = append(o, byte(wb.OpI32Eq))
	retNeg()
	o = append(o, byte(wb.OpEnd))
	o = op32(o, wb.OpLocalGet, nw)
	o = op32(o, wb.OpGlobalSet, p.pages)
	fuel()
	o = op32(o, wb.OpLocalGet, old)
	return append(o, byte(wb.OpEnd))
}

// ifThen opens an if without results; the caller writes its body and end.
func ifThen(o []byte) []byte { return append(o, byte(wb.OpIf), 0x40) }

// noteDispatch records the loop around the br_table at p.insts[idx] as a
// dispatch if the loop's body starts with blocks without params or
// results, then a local.get of the table's operand, then the table. The
// walk has just pushed those blocks, so they are the frames above the
// loop.
func (p *pass) noteDispatch(b []byte, idx int) {
	if p.cfg.ablate&ablateDirectJumps != 0 || idx < 2 || p.insts[idx-1].Op != wb.OpLocalGet {
		return
	}
	blocks := 0
	k := idx - 2
	for ; k >= 0 && p.insts[k].Op == wb.OpBlock && p.insts[k].BlockType == wb.BlockEmpty; k-- {
		blocks++
	}
	li := len(p.ctl) - 1 - blocks
	if k < 0 || p.insts[k].Op != wb.OpLoop || p.insts[k].BlockType != wb.BlockEmpty || li < 0 ||
		p.ctl[li].kind != ctlLoop || p.ctl[li].dispatch != 0 {
		return
	}
	first := len(p.dispTargets)
	wb.BrTableLabels(b, p.insts[idx], func(l uint32) {
		block := int32(-1)
		if fi := len(p.ctl) - 1 - int(l); fi > li {
			block = int32(l)
		}
		p.dispTargets = append(p.dispTargets, block)
	})
	p.dispatches = append(p.dispatches, dispatch{local: p.insts[idx-1].Imm, blocks: blocks, first: first, n: len(p.dispTargets) - first, regions: len(p.falls)})
	p.falls = append(p.falls, make([]bool, blocks+1)...)
	for i := li; i < len(p.ctl); i++ {
		p.ctl[i].dispatch = int32(len(p.dispatches))
	}
}

// noteJump sends the br at p.insts[idx] straight to its target if it is
// a forward dispatch jump: "i32.const K; local.set L; br loop" to a
// dispatch on L whose table sends K to the end of one of its blocks that
// is still open here. Going there directly is the same: the loop header
// runs no code but the dispatch, and neither a loop without params nor a
// block without results takes a value. It skips the header's charge,
// check and indirect branch, which is the point: Go compiles every jump
// into a dispatch jump, forward ones included, and only a jump back can
// make a loop (RATIONALE.md, "Dispatch jumps go straight to their
// target").
func (p *pass) noteJump(idx int) {
	fi := len(p.ctl) - 1 - int(p.insts[idx].Imm)
	f := p.ctl[fi]
	if f.kind != ctlLoop || f.dispatch == 0 || idx < 2 {
		return
	}
	d := p.dispatches[f.dispatch-1]
	set, k := p.insts[idx-1], p.insts[idx-2]
	if set.Op != wb.OpLocalSet || set.Imm != d.local || k.Op != wb.OpI32Const {
		return
	}
	to := p.dispTargets[d.first+int(min(k.Imm, uint32(d.n-1)))]
	if to < 0 {
		return // not one of the blocks
	}
	j := jump{inst: idx, d: f.dispatch - 1, from: int32(d.closed), to: to + 1}
	if int(to) < d.closed {
		p.backs = append(p.backs, j)
		return
	}
	// Block to is open; the blocks are the frames above the loop, the
	// outermost first.
	j.label = uint32(len(p.ctl) - 1 - (fi + d.blocks - int(to)))
	p.jumps = append(p.jumps, j)
}

// keepJumps, once the body is walked, keeps the forward jumps that do
// not enter a loop from outside it: a jump into a loop still goes
// through the dispatch. Measured (RATIONALE.md, "Dispatch jumps go
// straight to their target"): wazero's register allocator can take the
// state of a loop's first region from the edge that enters it first,
// and a direct entry made the loop's own edges shuffle registers on
// every iteration (sha256 +10 %); through the dispatch, every region
// starts from the loop header's state.
func (p *pass) keepJumps() {
	if len(p.jumps) == 0 {
		return
	}
	p.groupJumps()
	p.dropJump = resize(p.dropJump, len(p.jumps))
	clear(p.dropJump)
	for d := range p.dispatches {
		group := p.grouped[p.groupStart[d]:p.groupStart[d+1]]
		if len(group) == 0 || group[0] >= int32(len(p.jumps)) {
			continue // no forward jumps (they sort first)
		}
		l := p.loopNest(int32(d), group)
		for _, i := range group {
			if int(i) >= len(p.jumps) {
				break
			}
			j := p.jumps[i]
			if l == nil {
				p.dropJump[i] = true // too large to analyse: no direct jumps
			} else if lp := l.inner[j.to]; lp >= 0 && !l.contains(lp, j.from) {
				p.dropJump[i] = true
			}
		}
	}
	keep := p.jumps[:0]
	for i, j := range p.jumps {
		if !p.dropJump[i] {
			keep = append(keep, j)
		}
	}
	p.jumps = keep
}

// groupJumps sorts the dispatch jumps by dispatch (a counting sort, so
// that the analysis stays linear however many dispatch loops a body
// has): grouped[groupStart[d]:groupStart[d+1]] are dispatch d's, as
// indices into p.jumps and then, offset by len(p.jumps), into p.backs.
func (p *pass) groupJumps() {
	n := len(p.dispatches)
	p.groupStart = resize(p.groupStart, n+1)
	clear(p.groupStart)
	for _, js := range [][]jump{p.jumps, p.backs} {
		for _, j := range js {
			p.groupStart[j.d+1]++
		}
	}
	for d := range n {
		p.groupStart[d+1] += p.groupStart[d]
	}
	p.grouped = resize(p.grouped, len(p.jumps)+len(p.backs))
	next := append(p.groupNext[:0], p.groupStart[:n]...)
	p.groupNext = next
	for i, j := range p.jumps {
		p.grouped[next[j.d]] = int32(i)
		next[j.d]++
	}
	for i, j := range p.backs {
		p.grouped[next[j.d]] = int32(len(p.jumps) + i)
		next[j.d]++
	}
}

// jump returns the forward jump i, or for i >= len(p.jumps) the backward
// jump i-len(p.jumps).
func (p *pass) jump(i int32) jump {
	if int(i) < len(p.jumps) {
		return p.jumps[i]
	}
	return p.backs[int(i)-len(p.jumps)]
}

// maxLoopRegions bounds the loop analysis, which is linear in the
// regions and jumps per level of loop nesting: a dispatch with more
// regions gets no direct jumps.
const maxLoopRegions = 4096

// maxLoopDepth bounds the nesting the analysis descends into; deeper
// loops count as part of the loop around them.
const maxLoopDepth = 64

// loops is the loop nest of a dispatch's regions.
type loops struct {
	inner  []int32 // per region: its innermost loop, or -1
	parent []int32 // per loop: the loop around it, or -1
}

// contains reports whether loop l contains region r.
func (l *loops) contains(lp, r int32) bool {
	for k := l.inner[r]; k >= 0; k = l.parent[k] {
		if k == lp {
			return true
		}
	}
	return false
}

// loopNest finds the loops among the regions of dispatch d: on the graph
// whose edges are falling through into the next region and the dispatch
// jumps, a loop is a strongly connected component, and the loops inside
// it are the components left when the edges into its entries (the
// regions entered from outside it) are cut. It returns nil if the
// dispatch has more than maxLoopRegions regions. group is the
// dispatch's jumps (see groupJumps). The result is scratch, valid until
// the next call.
func (p *pass) loopNest(d int32, group []int32) *loops {
	disp := p.dispatches[d]
	n := disp.blocks + 1
	if n > maxLoopRegions {
		return nil
	}
	g := &p.graph
	g.reset(n)
	edge := func(u, v int32) {
		g.succ[u] = append(g.succ[u], v)
		g.pred[v] = append(g.pred[v], u)
	}
	for r := int32(0); r+1 < int32(n); r++ {
		if p.falls[disp.regions+int(r)] {
			edge(r, r+1)
		}
	}
	for _, i := range group {
		j := p.jump(i)
		edge(j.from, j.to)
	}
	l := &p.loops
	l.inner, l.parent = resize(l.inner, n), l.parent[:0]
	g.all = resize(g.all, n)
	for i := range n {
		g.all[i], l.inner[i], g.scope[i] = int32(i), -1, -1
	}
	g.nest(l, g.all, -1, 0)
	return l
}

// resize returns s with length n, reusing its array when it can.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

// reset makes g an empty graph of n regions, reusing its arrays.
func (g *regionGraph) reset(n int) {
	g.succ, g.pred = resize(g.succ, n), resize(g.pred, n)
	for i := range n {
		g.succ[i], g.pred[i] = g.succ[i][:0], g.pred[i][:0]
	}
	g.scope, g.cut = resize(g.scope, n), resize(g.cut, n)
	clear(g.cut)
	g.index, g.low, g.onStack = resize(g.index, n), resize(g.low, n), resize(g.onStack, n)
}

// regionGraph is a dispatch's regions and their edges, with the scratch
// of loopNest: scope[v] is the loop whose inside is being searched when v
// belongs to it, cut[v] that edges into v are left out.
type regionGraph struct {
	succ, pred [][]int32
	scope      []int32
	cut        []bool
	index, low []int32
	onStack    []bool
	stack      []int32
	next       int32
	all        []int32
}

// nest records the loops among nodes (whose scope is outer) and,
// recursively, the loops inside them.
func (g *regionGraph) nest(l *loops, nodes []int32, outer int32, depth int) {
	if depth >= maxLoopDepth {
		return
	}
	for _, comp := range g.components(nodes, outer) {
		id := int32(len(l.parent))
		l.parent = append(l.parent, outer)
		for _, v := range comp {
			l.inner[v], g.scope[v] = id, id
		}
		// Cut the edges into the entries; a loop only the dispatch
		// enters is entered at its first region.
		var entries []int32
		for _, v := range comp {
			for _, u := range g.pred[v] {
				if g.scope[u] != id && !g.cut[v] {
					g.cut[v] = true
					entries = append(entries, v)
				}
			}
		}
		if len(entries) == 0 {
			first := slices.Min(comp)
			g.cut[first] = true
			entries = append(entries, first)
		}
		g.nest(l, comp, id, depth+1)
		for _, v := range entries {
			g.cut[v] = false
		}
	}
}

// selfLoop reports whether region v jumps back to its own start.
func (g *regionGraph) selfLoop(v int32) bool {
	return !g.cut[v] && slices.Contains(g.succ[v], v)
}

// components returns the strongly connected components of nodes (all
// in scope) that are loops, following only edges into nodes in scope
// that are not cut (Tarjan's algorithm).
func (g *regionGraph) components(nodes []int32, scope int32) [][]int32 {
	for _, v := range nodes {
		g.index[v] = -1
		g.onStack[v] = false
	}
	g.next = 0
	var out [][]int32
	var visit func(v int32)
	visit = func(v int32) {
		g.index[v], g.low[v] = g.next, g.next
		g.next++
		g.stack = append(g.stack, v)
		g.onStack[v] = true
		for _, w := range g.succ[v] {
			if g.scope[w] != scope || g.cut[w] {
				continue
			}
			if g.index[w] < 0 {
				visit(w)
				g.low[v] = min(g.low[v], g.low[w])
			} else if g.onStack[w] {
				g.low[v] = min(g.low[v], g.index[w])
			}
		}
		if g.low[v] == g.index[v] {
			i := len(g.stack) - 1
			for g.stack[i] != v {
				i--
			}
			for _, w := range g.stack[i:] {
				g.onStack[w] = false
			}
			// A single region is a loop only if it jumps to itself;
			// leave the rest out, which spares most allocations.
			if len(g.stack)-i > 1 || g.selfLoop(v) {
				out = append(out, slices.Clone(g.stack[i:]))
			}
			g.stack = g.stack[:i]
		}
	}
	for _, v := range nodes {
		if g.index[v] < 0 {
			visit(v)
		}
	}
	return out
}
