// Package runtime loads warden tool modules and runs their calls in a sandbox.
//
// A Runtime compiles modules once (with an on-disk compilation cache), checks
// them against the tool ABI (docs/abi.md), and keeps a pool of instances per
// Module. Module.Call validates arguments against the tool's input schema,
// runs the guest under its limits (deadline, memory, output size, fuel),
// validates the output, and always returns a *tool.Result: every trap, exit,
// bad pointer or oversized output becomes an error result of the matching
// tool.Kind, the broken instance is discarded, and the next call gets a fresh
// one. Nothing a guest does reaches the process's stdout.
//
// Two loaders share everything above them: native tool modules (the ABI of
// docs/abi.md, native.go) and Extism plugins (hyper-mcp and mcp.run shapes,
// runtime/internal/extism). The first loader that claims a module loads it
// and decides its kind; each owns its kind's checks, instantiation,
// snapshot and reset behind one interface (runtime/internal/guest); the
// pool and the call path never ask the kind.
//
// A Module is what a module lists (its tools, rejections, resources and
// prompts); the code that serves its calls is loaded by Load at once, or
// by a Module from Open at its first call, and released when idle.
//
// The package is warden's embedding API: a Go program can load tool
// modules and call them without an MCP server (see the examples).
//
// The runtime knows nothing of MCP; internal/catalog decides which tools a set of
// modules serves, and package mcpserver serves them.
package runtime
