// The exports of docs/abi.md. A tool module's entry file re-exports them:
//
//   export * from "@warden-run/sdk/assembly/abi";
//
// Runtime: the package's asconfig.json selects AssemblyScript's "minimal"
// runtime, whose collector runs only when __collect() is called. Every
// export below ends with one, when no managed value is live on the wasm
// stack (the minimal runtime does not scan it), so under session isolation
// each call frees everything the previous one left behind and an instance's
// memory stays the same size however many calls it serves. See README.md.

import { allocLent, takeLent, freeAllLent, respond, pack } from "./buffers";
import { describe, dispatch, Result } from "./index";
// The replacements of env.abort, env.trace and env.seed live in abort.ts,
// imported here so that every module that re-exports the ABI compiles them
// (asconfig.json's "use" names them) without exporting them.
import "./abort";

export function warden_abi_version(): i32 {
  return 1;
}

// warden_alloc is also called by the host while a capability import runs, to
// place the reply: it must only allocate (no host calls, no collection).
export function warden_alloc(size: i32): i32 {
  if (size < 0) return 0;
  return <i32>allocLent(<usize>size);
}

export function warden_describe(): i64 {
  freeAllLent();
  const r = respond(describe());
  __collect();
  return <i64>r;
}

export function warden_call(request: i64): i64 {
  const ptr = <usize>(<u64>request >> 32);
  const len = <usize>(<u64>request & 0xffffffff);
  const req = takeLent(ptr, len);
  freeAllLent();
  let r: u64;
  if (req === null) {
    r = respond(Result.failed("request range was not allocated by warden_alloc").toJSON());
  } else {
    r = respond(dispatch(req));
  }
  __collect();
  return <i64>r;
}
