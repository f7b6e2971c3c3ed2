// Command badjson is a runtime test fixture: its warden_call returns bytes that are not JSON. It implements the ABI by hand (the SDK would always answer JSON).
package main

import (
	"encoding/json"
	"unsafe"

	"github.com/warden-run/warden/tool"
)

func main() {}

// lent keeps buffers handed to the host alive until the next call.
var lent [][]byte

// resp keeps the last response alive after warden_call returns.
var resp []byte

func addr(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

func pack(ptr, n uint32) uint64 { return uint64(ptr)<<32 | uint64(n) }

//go:wasmexport warden_abi_version
func abiVersion() int32 { return 1 }

//go:wasmexport warden_alloc
func alloc(size int32) int32 {
	b := make([]byte, max(size, 1))
	lent = append(lent, b)
	return int32(addr(b))
}

//go:wasmexport warden_describe
func describe() int64 {
	d := tool.Descriptor{
		Name:        "badjson",
		Description: "Runtime test fixture: returns a broken response.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}
	var err error
	resp, err = json.Marshal(map[string][]tool.Descriptor{"tools": {d}})
	if err != nil {
		panic(err)
	}
	return int64(pack(addr(resp), uint32(len(resp))))
}

//go:wasmexport warden_call
func call(request int64) int64 {
	lent = nil
	resp = []byte("this is {not json")
	return int64(pack(addr(resp), uint32(len(resp))))
}
