// countdown: reports progress (warden.progress) as it works, and may run as
// an MCP task, where its progress is the task's status message.
import { Args, Context, Descriptor, Result, TaskSupport, register } from "../assembly";
export * from "../assembly/abi";

register(
  new Descriptor(
    "countdown",
    "Counts down from n, reporting progress at each step.",
    `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":100}},"required":["n"]}`,
  )
    .readOnly()
    .taskSupport(TaskSupport.Optional),
  countdown,
);

function countdown(ctx: Context, args: Args): Result {
  const n = args.int("n", 0);
  if (n < 1) return Result.invalidArguments("n must be at least 1");
  for (let i: i64 = 1; i <= n; i++) {
    ctx.progress(<f64>i, <f64>n, (n - i).toString() + " left");
  }
  return Result.text("liftoff after " + n.toString() + " steps");
}
