package schema

// callStackBytes is how far growCallStack grows the calling goroutine's
// stack: a frame of this size on top of the caller's makes the runtime
// move the stack to 32 KiB, which is what validating the simplest value
// with jsonschema-go reaches anyway.
const callStackBytes = 16 << 10

// growCallStack grows the calling goroutine's stack to what jsonschema-go's
// validator will need, in one step, before it goes deep.
//
// The go-sdk runs every request on a new goroutine, whose stack starts
// small (the runtime's adaptive start follows the average of the stacks
// it scans, mostly idle goroutines here). The validator recurses with
// 4 KiB frames, so without this the stack grows 2→4→8→16→32 KiB while a
// call is validated, and every growth copies the stack and walks all its
// frames (symbol-table lookups in a large binary): 6–9 % of warden serve's
// CPU per echo call. Growing once walks the frames once. Only the
// validator's path pays it: a value a flat schema accepts (flat.go)
// never recurses (RATIONALE.md, "The stdio call path").
//
//go:noinline
func growCallStack(b byte) byte {
	var pad [callStackBytes]byte
	pad[b] = b
	return pad[int(b)*7]
}
