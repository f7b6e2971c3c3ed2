// probe: a test fixture for assemblyscript_test.go, not an example. churn
// allocates and drops garbage the way a real tool does (JSON, strings,
// host replies); pages reports the instance's memory size, so the test can
// check that a session's memory stops growing.
import { Args, Context, Descriptor, Result, register, JSON, envList } from "../assembly";
export * from "../assembly/abi";

register(new Descriptor("churn", "Allocates and drops garbage.", `{"type":"object"}`), churn);
register(new Descriptor("pages", "Reports the memory size in pages.", `{"type":"object"}`), pages);

function churn(ctx: Context, args: Args): Result {
  let s = "";
  for (let i = 0; i < 200; i++) s += "héllo 𝄞 " + i.toString();
  const o = JSON.parse<JSON.Obj>(`{"a":[1,2,3],"b":{"c":"` + s + `"}}`);
  // A capability reply the host allocates through warden_alloc (denied: no grant).
  const r = envList();
  return Result.text(o.keys().length.toString() + " " + r.errorKind + " " + s.length.toString());
}

function pages(ctx: Context, args: Args): Result {
  return Result.text(memory.size().toString());
}
