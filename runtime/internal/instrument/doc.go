// Package instrument rewrites a WebAssembly module once, before it is
// compiled, so that the host can meter and bound every call into it:
//
//   - Fuel: code is charged its static cost where control merges, against
//     a copy of an exported mutable i64 global that each function keeps in
//     a local and stores back before calls and returns, so a host function
//     or a callee always sees the exact fuel; loop headers and the entries
//     of functions that call check it, and when it is negative refill it
//     in slices from a reserve global (passing through the engine's Go
//     code, so the Go runtime can stop the goroutine for GC) or trap when
//     the budget is spent. Bulk
//     memory and table instructions and memory.grow charge their size
//     operand at run time. Host functions charge in Go (Meter.Charge).
//   - Call depth: an exported i32 global counts nested calls and traps
//     when it exceeds Config.MaxCallDepth, long before the engine's own
//     stack (hundreds of MiB under wazero's compiler) runs out.
//   - Snapshots: every mutable global the module defines is exported, so
//     the runtime can save and restore instance state without
//     re-instantiating, and Result tells whether tables can change.
//   - Virtual memory size: memory.size and memory.grow work against an
//     exported page count, so an instance restored to a snapshot reports
//     the snapshot's size even though its real memory already grew.
//   - Dispatch jumps: in a loop that begins by dispatching on a local
//     through br_table (Go compiles every function into one), a jump that
//     sets the local to a constant and branches to the loop goes straight
//     to the block end the table would pick, when that is a forward jump
//     that does not enter a loop from outside it. The program is the same;
//     it skips the loop header's charge, check and indirect branch, and
//     the register shuffle wazero's compiler does on every edge into the
//     header (Result.DirectJumps counts them).
//
// Instrument does the rewrite; Meter is the host half, used around each
// call: Start sets the budget and arms a watchdog that turns a context's
// deadline or cancellation into a fuel trap, and its stop function reports
// the fuel consumed and why the guest stopped.
//
// Everything added is appended (globals, functions, types, exports, two
// scratch locals per function, and a private zero-page memory for a module
// without one, used only by the refill), so no index the module uses shifts, and
// every section the pass does not need to change is copied byte for byte.
// The pass adds no imports. Exports it adds are named "warden:fuel",
// "warden:fuel-reserve", "warden:depth", "warden:pages" and
// "warden:global:N" (N the global's
// index); a module that already exports a name starting with "warden:" is
// rejected.
//
// Supported input: MVP, sign-extension, non-trapping float-to-int,
// bulk memory, reference types, multi-value, SIMD and tail calls, i.e.
// what Go, clang (wasm32-wasi) and AssemblyScript emit. Threads,
// exception handling, GC, multi-memory, memory64, relaxed SIMD and unknown
// opcodes are rejected with an error naming the opcode and its offset.
//
// Instrument checks the index immediates it relies on (functions, globals,
// locals, types) against the original module, so that an invalid module
// cannot become a valid one that reaches the pass's own globals. It does
// not otherwise validate: the engine does that when it compiles the result.
package instrument
