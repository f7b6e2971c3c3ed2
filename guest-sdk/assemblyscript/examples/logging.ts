// greet: logs (warden.log) at each level; the lines reach the MCP client's
// log and warden's stderr, never the model.
import { Args, Context, Descriptor, Level, Result, register } from "../assembly";
export * from "../assembly/abi";

register(
  new Descriptor(
    "greet",
    "Greets someone, logging what it does.",
    `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`,
  ).readOnly(),
  greet,
);

function greet(ctx: Context, args: Args): Result {
  const name = args.string("name");
  if (name === null) return Result.invalidArguments("name must be a string");
  ctx.log(Level.Debug, "call " + ctx.callId);
  ctx.log(Level.Info, "greeting " + name);
  if (name.length > 20) ctx.log(Level.Warning, "a long name");
  return Result.text("Hello, " + name + "!");
}
