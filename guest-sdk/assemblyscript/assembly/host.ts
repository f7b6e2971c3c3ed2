// The warden.* imports of docs/abi.md. Capability functions take a packed
// request range and return a packed reply range that the host allocated
// through warden_alloc (re-entrantly, while the import runs).

// @ts-ignore: decorator
@external("warden", "log")
export declare function importLog(level: i32, message: u64): void;
// @ts-ignore: decorator
@external("warden", "progress")
export declare function importProgress(report: u64): void;
// @ts-ignore: decorator
@external("warden", "fs")
export declare function importFS(request: u64): u64;
// @ts-ignore: decorator
@external("warden", "memory")
export declare function importMemory(request: u64): u64;
// @ts-ignore: decorator
@external("warden", "lsp")
export declare function importLSP(request: u64): u64;
// @ts-ignore: decorator
@external("warden", "net")
export declare function importNet(request: u64): u64;
// @ts-ignore: decorator
@external("warden", "env")
export declare function importEnv(request: u64): u64;
// @ts-ignore: decorator
@external("warden", "elicit")
export declare function importElicit(request: u64): u64;
// @ts-ignore: decorator
@external("warden", "sample")
export declare function importSample(request: u64): u64;
// @ts-ignore: decorator
@external("warden", "roots")
export declare function importRoots(request: u64): u64;
// @ts-ignore: decorator
@external("warden", "ask")
export declare function importAsk(request: u64): u64;

// fd_write is the one WASI function the SDK uses: an abort writes its
// message to stderr, which warden captures per call and keeps in the
// result's details even when the call traps or runs at load.
// @ts-ignore: decorator
@external("wasi_snapshot_preview1", "fd_write")
export declare function fdWrite(fd: u32, iovs: usize, iovsLen: usize, written: usize): u16;

// random_get seeds Math.random (env.seed is replaced by the SDK's).
// @ts-ignore: decorator
@external("wasi_snapshot_preview1", "random_get")
export declare function randomGet(buf: usize, len: usize): u16;
