// Replacements for the env.abort, env.trace and env.seed imports a default
// AssemblyScript build makes: warden refuses every import outside warden.*
// and wasi_snapshot_preview1. The package's asconfig.json points the
// compiler at these through "use", so a tool author never sees them.

import { fdWrite, randomGet } from "./host";

// Stderr writes from abort go here. Static, so an abort raised by an
// allocator failure still has somewhere to format its message.
const ABORT_BUF_SIZE: usize = 1024;
const abortBuf = memory.data(<i32>ABORT_BUF_SIZE);
const iov = memory.data(16);

function writeStderr(s: string): void {
  // Encode into the static buffer without allocating: the heap may be what failed.
  const n = String.UTF8.encodeUnsafe(changetype<usize>(s), min(s.length, <i32>(ABORT_BUF_SIZE / 3)), abortBuf, false, String.UTF8.ErrorMode.REPLACE);
  store<u32>(iov, <u32>abortBuf);
  store<u32>(iov, <u32>n, 4);
  fdWrite(2, iov, 1, iov + 8);
}

/**
 * Replaces AssemblyScript's env.abort (which warden does not provide), via
 * `use: abort=...` in the package's asconfig.json. A failed assert, an
 * array index out of range or an explicit abort() writes its message to
 * stderr (captured in the call's details) and traps: the call ends with
 * kind "trapped", warden discards the instance, and the next call gets a
 * fresh one. AssemblyScript has no unwinding, so trapping is the only way
 * out that leaves no half-updated state behind.
 */
export function wardenAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  // Piece by piece: concatenating would allocate, and the heap may be what failed.
  writeStderr("abort: ");
  writeStderr(message !== null ? message : "(no message)");
  if (fileName !== null) {
    writeStderr(" at ");
    writeStderr(fileName);
    writeStderr(":" + line.toString() + ":" + column.toString());
  }
  writeStderr("\n");
  unreachable();
}

/** Replaces env.trace: the message goes to stderr. */
export function wardenTrace(message: string, n: i32 = 0, a0: f64 = 0, a1: f64 = 0, a2: f64 = 0, a3: f64 = 0, a4: f64 = 0): void {
  let s = "trace: " + message;
  if (n > 0) s += " " + a0.toString();
  if (n > 1) s += " " + a1.toString();
  if (n > 2) s += " " + a2.toString();
  if (n > 3) s += " " + a3.toString();
  if (n > 4) s += " " + a4.toString();
  writeStderr(s + "\n");
}

/** Replaces env.seed (Math.random's seed) with WASI random_get, which warden provides. */
export function wardenSeed(): f64 {
  const buf = memory.data(8);
  randomGet(buf, 8);
  // A seed of 0 would make AssemblyScript's xorshift generator emit zeros.
  const v = load<u64>(buf) | 1;
  return reinterpret<f64>((v & 0x000fffffffffffff) | 0x3ff0000000000000);
}
