//go:build wasip1

package warden

import (
	"encoding/json"
	"runtime"
	"unsafe"

	"github.com/warden-run/warden/tool"
)

// This file is the only wasm-specific part of the SDK: the exports and
// imports of docs/abi.md, translated to and from the plain Go in the rest of
// the package. Addresses are Go pointers: on wasm they are offsets into
// linear memory, which is exactly what the host reads and writes.

var lent = newBuffers()

func addrOf(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

func packBytes(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return pack(addrOf(b), uint32(len(b)))
}

func packString(s string) uint64 {
	if len(s) == 0 {
		return 0
	}
	return pack(uint32(uintptr(unsafe.Pointer(unsafe.StringData(s)))), uint32(len(s)))
}

//go:wasmexport warden_abi_version
func wardenABIVersion() int32 { return 1 }

// warden_alloc may be called while a warden.* import is in progress: the
// host allocates a capability's reply that way. It therefore must not touch
// anything but the lent map, and must not reset it.
//
//go:wasmexport warden_alloc
func wardenAlloc(size int32) int32 {
	a, _ := lent.alloc(size, addrOf)
	return int32(a)
}

//go:wasmexport warden_describe
func wardenDescribe() int64 {
	lent.reset()
	return int64(packBytes(lent.respond(module.Describe())))
}

//go:wasmexport warden_call
func wardenCall(request int64) int64 {
	ptr, n := unpack(uint64(request))
	req, ok := lent.take(ptr, n)
	lent.reset()
	var resp []byte
	if ok {
		// The previous response has been read: its storage takes this one.
		resp = module.dispatch(lent.reuse(), req, wasmHost{})
		lent.keep(resp)
	} else {
		resp = encodeError(Failed("request range %#x+%d was not allocated by warden_alloc", ptr, n), nil)
	}
	return int64(packBytes(lent.respond(resp)))
}

//go:wasmexport warden_read_resource
func wardenReadResource(request int64) int64 { return serveOp(request, module.ReadResource) }

//go:wasmexport warden_get_prompt
func wardenGetPrompt(request int64) int64 { return serveOp(request, module.GetPrompt) }

//go:wasmexport warden_complete
func wardenComplete(request int64) int64 { return serveOp(request, module.Complete) }

// serveOp is warden_call's handoff for the exports of resources, prompts
// and completions.
func serveOp(request int64, serve func([]byte, HostFuncs) []byte) int64 {
	ptr, n := unpack(uint64(request))
	req, ok := lent.take(ptr, n)
	lent.reset()
	var resp []byte
	if ok {
		resp = serve(req, wasmHost{})
	} else {
		resp = encodeError(Failed("request range %#x+%d was not allocated by warden_alloc", ptr, n), nil)
	}
	return int64(packBytes(lent.respond(resp)))
}

//go:wasmimport warden log
func importLog(level int32, message uint64)

//go:wasmimport warden progress
func importProgress(report uint64)

//go:wasmimport warden fs
func importFS(request uint64) uint64

//go:wasmimport warden memory
func importMemory(request uint64) uint64

//go:wasmimport warden lsp
func importLSP(request uint64) uint64

//go:wasmimport warden net
func importNet(request uint64) uint64

//go:wasmimport warden env
func importEnv(request uint64) uint64

//go:wasmimport warden elicit
func importElicit(request uint64) uint64

//go:wasmimport warden sample
func importSample(request uint64) uint64

//go:wasmimport warden roots
func importRoots(request uint64) uint64

//go:wasmimport warden ask
func importAsk(request uint64) uint64

// wasmHost is HostFuncs over the warden.* imports.
type wasmHost struct{}

func (wasmHost) Log(level Level, message string) {
	importLog(int32(level), packString(message))
	runtime.KeepAlive(message)
}

func (wasmHost) Progress(p tool.Progress) {
	b, err := json.Marshal(p)
	if err != nil {
		return // only a NaN or infinite number fails; such a report means nothing
	}
	importProgress(packBytes(b))
	runtime.KeepAlive(b)
}

func (wasmHost) Capability(name string, request []byte) []byte {
	var reply uint64
	packed := packBytes(request)
	switch name {
	case "fs":
		reply = importFS(packed)
	case "memory":
		reply = importMemory(packed)
	case "lsp":
		reply = importLSP(packed)
	case "net":
		reply = importNet(packed)
	case "env":
		reply = importEnv(packed)
	case "elicit":
		reply = importElicit(packed)
	case "sample":
		reply = importSample(packed)
	case "roots":
		reply = importRoots(packed)
	case "ask":
		reply = importAsk(packed)
	default:
		return encodeReplyError(Failed("unknown host capability %q", name))
	}
	runtime.KeepAlive(request)
	ptr, n := unpack(reply)
	b, ok := lent.take(ptr, n)
	if !ok {
		return encodeReplyError(Failed("%s reply range %#x+%d was not allocated by warden_alloc", name, ptr, n))
	}
	return b
}
