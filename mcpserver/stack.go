package mcpserver

// callStackBytes is how far growCallStack grows the calling goroutine's
// stack: a frame of this size on top of the handler's makes the runtime
// move the stack to 32 KiB, which is what the simplest tool call (an
// object with one string property validated on the way in and out, as
// the echo tool's) reaches anyway.
const callStackBytes = 16 << 10

// growCallStack grows the stack of the goroutine a tool call runs on to
// what the call will need, in one step, before the call goes deep.
//
// The go-sdk runs every request on a new goroutine, whose stack starts
// small (the runtime's adaptive start follows the average of the stacks
// it scans, mostly idle goroutines here). Schema validation recurses with
// 4 KiB frames (jsonschema-go's validate), so without this the stack grows
// 2→4→8→16→32 KiB while the call runs, and every growth copies the stack
// and walks all its frames (symbol-table lookups in a large binary): 6–9 %
// of warden serve's CPU per echo call. Growing once here walks the
// handler's frames once. The stack ends the same size as it would have,
// and it goes with the goroutine when the call returns (RATIONALE.md, "The
// stdio call path").
//
//go:noinline
func growCallStack(b byte) byte {
	var pad [callStackBytes]byte
	pad[b] = b
	return pad[int(b)*7]
}
