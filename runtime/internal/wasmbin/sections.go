package wasmbin

// ValType is a value type byte.
type ValType byte

const (
	I32       ValType = 0x7f
	I64       ValType = 0x7e
	F32       ValType = 0x7d
	F64       ValType = 0x7c
	V128      ValType = 0x7b
	FuncRef   ValType = 0x70
	ExternRef ValType = 0x6f
)

// ValidValType reports whether t is a value type of the supported features.
func ValidValType(t byte) bool {
	switch ValType(t) {
	case I32, I64, F32, F64, V128, FuncRef, ExternRef:
		return true
	}
	return false
}

func (r *Reader) valType() (ValType, error) {
	at := r.pos
	c, err := r.Byte()
	if err != nil {
		return 0, err
	}
	if !ValidValType(c) {
		return 0, errAt(at, "unsupported value type %#x", c)
	}
	return ValType(c), nil
}

// External kinds of imports and exports.
const (
	KindFunc   byte = 0
	KindTable  byte = 1
	KindMemory byte = 2
	KindGlobal byte = 3
	KindTag    byte = 4
)

// FuncType is a function signature.
type FuncType struct {
	Params, Results []ValType
}

// Equal reports whether two signatures are the same.
func (t FuncType) Equal(o FuncType) bool {
	return string(valBytes(t.Params)) == string(valBytes(o.Params)) &&
		string(valBytes(t.Results)) == string(valBytes(o.Results))
}

func valBytes(v []ValType) []byte {
	b := make([]byte, len(v))
	for i, t := range v {
		b[i] = byte(t)
	}
	return b
}

// AppendFuncType appends the encoding of t as a type section entry.
func AppendFuncType(b []byte, t FuncType) []byte {
	b = append(b, 0x60)
	b = AppendU32(b, uint32(len(t.Params)))
	b = append(b, valBytes(t.Params)...)
	b = AppendU32(b, uint32(len(t.Results)))
	return append(b, valBytes(t.Results)...)
}

func (r *Reader) valTypes() ([]ValType, error) {
	n, err := r.Count()
	if err != nil {
		return nil, err
	}
	v := make([]ValType, n)
	for i := range v {
		if v[i], err = r.valType(); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Types decodes a type section.
func (r *Reader) Types() ([]FuncType, error) {
	n, err := r.Count()
	if err != nil {
		return nil, err
	}
	ts := make([]FuncType, n)
	for i := range ts {
		at := r.pos
		form, err := r.Byte()
		if err != nil {
			return nil, err
		}
		if form != 0x60 {
			return nil, errAt(at, "unsupported type form %#x (only func types)", form)
		}
		if ts[i].Params, err = r.valTypes(); err != nil {
			return nil, err
		}
		if ts[i].Results, err = r.valTypes(); err != nil {
			return nil, err
		}
	}
	return ts, r.End("type section")
}

// Limits are the size limits of a memory or table.
type Limits struct {
	Min    uint32
	Max    uint32
	HasMax bool
}

func (r *Reader) limits() (Limits, error) {
	at := r.pos
	flag, err := r.Byte()
	if err != nil {
		return Limits{}, err
	}
	var l Limits
	switch flag {
	case 0, 1:
	case 2, 3:
		return l, errAt(at, "unsupported shared memory (threads)")
	default:
		return l, errAt(at, "unsupported limits flag %#x", flag)
	}
	if l.Min, err = r.U32(); err != nil {
		return l, err
	}
	if flag == 1 {
		l.HasMax = true
		if l.Max, err = r.U32(); err != nil {
			return l, err
		}
	}
	return l, nil
}

// GlobalType is the type of a global.
type GlobalType struct {
	Type    ValType
	Mutable bool
}

func (r *Reader) globalType() (GlobalType, error) {
	t, err := r.valType()
	if err != nil {
		return GlobalType{}, err
	}
	at := r.pos
	m, err := r.Byte()
	if err != nil {
		return GlobalType{}, err
	}
	if m > 1 {
		return GlobalType{}, errAt(at, "bad global mutability %#x", m)
	}
	return GlobalType{Type: t, Mutable: m == 1}, nil
}

// Import is one import; the field for its Kind is set.
type Import struct {
	Module, Name string
	Kind         byte
	TypeIndex    uint32     // KindFunc
	Limits       Limits     // KindMemory, KindTable
	Global       GlobalType // KindGlobal
}

// Imports decodes an import section.
func (r *Reader) Imports() ([]Import, error) {
	n, err := r.Count()
	if err != nil {
		return nil, err
	}
	is := make([]Import, n)
	for i := range is {
		im := &is[i]
		if im.Module, err = r.Name(); err != nil {
			return nil, err
		}
		if im.Name, err = r.Name(); err != nil {
			return nil, err
		}
		at := r.pos
		if im.Kind, err = r.Byte(); err != nil {
			return nil, err
		}
		switch im.Kind {
		case KindFunc:
			im.TypeIndex, err = r.U32()
		case KindTable:
			if _, err = r.valType(); err == nil {
				im.Limits, err = r.limits()
			}
		case KindMemory:
			im.Limits, err = r.limits()
		case KindGlobal:
			im.Global, err = r.globalType()
		default:
			return nil, errAt(at, "unsupported import kind %#x", im.Kind)
		}
		if err != nil {
			return nil, err
		}
	}
	return is, r.End("import section")
}

// Functions decodes a function section: the type index of each function.
func (r *Reader) Functions() ([]uint32, error) {
	n, err := r.Count()
	if err != nil {
		return nil, err
	}
	fs := make([]uint32, n)
	for i := range fs {
		if fs[i], err = r.U32(); err != nil {
			return nil, err
		}
	}
	return fs, r.End("function section")
}

// Memories decodes a memory section.
func (r *Reader) Memories() ([]Limits, error) {
	n, err := r.Count()
	if err != nil {
		return nil, err
	}
	ms := make([]Limits, n)
	for i := range ms {
		if ms[i], err = r.limits(); err != nil {
			return nil, err
		}
	}
	return ms, r.End("memory section")
}

// Global is a global definition; Init is its raw constant expression
// including the final end opcode.
type Global struct {
	Type GlobalType
	Init []byte
}

// Globals decodes a global section.
func (r *Reader) Globals() ([]Global, error) {
	n, err := r.Count()
	if err != nil {
		return nil, err
	}
	gs := make([]Global, n)
	for i := range gs {
		if gs[i].Type, err = r.globalType(); err != nil {
			return nil, err
		}
		if gs[i].Init, err = r.ConstExpr(); err != nil {
			return nil, err
		}
	}
	return gs, r.End("global section")
}

// ConstExpr reads a constant expression up to and including its end.
func (r *Reader) ConstExpr() ([]byte, error) {
	start := r.pos
	for {
		in, err := Decode(r.b, r.pos)
		if err != nil {
			return nil, err
		}
		r.pos = in.End
		switch in.Op {
		case OpEnd:
			return r.b[start:r.pos], nil
		case OpI32Const, OpI64Const, OpF32Const, OpF64Const, OpV128Const, OpRefNull, OpRefFunc, OpGlobalGet,
			OpI32Add, OpI32Sub, OpI32Mul, OpI64Add, OpI64Sub, OpI64Mul:
		default:
			return nil, errAt(in.Pos, "%s not allowed in a constant expression", in.Op)
		}
	}
}

// AppendGlobal appends the encoding of a global section entry.
func AppendGlobal(b []byte, g Global) []byte {
	b = append(b, byte(g.Type.Type))
	if g.Type.Mutable {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	return append(b, g.Init...)
}

// Export is one export.
type Export struct {
	Name  string
	Kind  byte
	Index uint32
}

// Exports decodes an export section.
func (r *Reader) Exports() ([]Export, error) {
	n, err := r.Count()
	if err != nil {
		return nil, err
	}
	es := make([]Export, n)
	for i := range es {
		if es[i].Name, err = r.Name(); err != nil {
			return nil, err
		}
		at := r.pos
		if es[i].Kind, err = r.Byte(); err != nil {
			return nil, err
		}
		if es[i].Kind > KindGlobal {
			return nil, errAt(at, "unsupported export kind %#x", es[i].Kind)
		}
		if es[i].Index, err = r.U32(); err != nil {
			return nil, err
		}
	}
	return es, r.End("export section")
}

// AppendExport appends the encoding of an export section entry.
func AppendExport(b []byte, e Export) []byte {
	b = AppendName(b, e.Name)
	b = append(b, e.Kind)
	return AppendU32(b, e.Index)
}

// Code is one function body as absolute offsets into the module: Start is
// the first byte after the size, End is one past the body.
type Code struct {
	Start, End int
}

// Codes decodes a code section into body ranges.
func (r *Reader) Codes() ([]Code, error) {
	n, err := r.Count()
	if err != nil {
		return nil, err
	}
	cs := make([]Code, n)
	for i := range cs {
		size, err := r.U32()
		if err != nil {
			return nil, err
		}
		if uint64(size) > uint64(r.Len()) || size == 0 {
			return nil, errAt(r.pos, "function body %d: size %d invalid", i, size)
		}
		cs[i] = Code{Start: r.pos, End: r.pos + int(size)}
		r.pos += int(size)
	}
	return cs, r.End("code section")
}

// LocalDecl is one run of locals of the same type.
type LocalDecl struct {
	Count uint32
	Type  ValType
}

// Locals reads the local declarations at the start of a body and returns
// them with the total number of declared locals.
func (r *Reader) Locals() ([]LocalDecl, uint64, error) {
	n, err := r.Count()
	if err != nil {
		return nil, 0, err
	}
	ds := make([]LocalDecl, n)
	var total uint64
	for i := range ds {
		if ds[i].Count, err = r.U32(); err != nil {
			return nil, 0, err
		}
		if ds[i].Type, err = r.valType(); err != nil {
			return nil, 0, err
		}
		total += uint64(ds[i].Count)
	}
	return ds, total, nil
}
