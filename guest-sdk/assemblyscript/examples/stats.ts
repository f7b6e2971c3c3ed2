// Two tools in one module: text_stats returns a structured result checked
// against its output schema; checked_ratio shows what an AssemblyScript
// abort (here a failed assert) does: the call ends as "trapped", its
// message goes to stderr (kept in the result's details), and the next call
// runs on a fresh instance.
import { Args, Context, Descriptor, Result, ObjectWriter, register } from "../assembly";
export * from "../assembly/abi";

register(
  new Descriptor(
    "text_stats",
    "Counts the characters, code points and lines of a text.",
    `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
  )
    .output(
      `{"type":"object","properties":{"utf16":{"type":"integer"},"codePoints":{"type":"integer"},"utf8Bytes":{"type":"integer"},"lines":{"type":"integer"},"upper":{"type":"string"}},"required":["utf16","codePoints","utf8Bytes","lines","upper"]}`,
    )
    .readOnly()
    .withTitle("Text statistics"),
  textStats,
);

register(
  new Descriptor(
    "checked_ratio",
    "Divides a by b, asserting that b is not zero.",
    `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`,
  ).readOnly(),
  checkedRatio,
);

function textStats(ctx: Context, args: Args): Result {
  const text = args.string("text");
  if (text === null) return Result.invalidArguments("text must be a string");
  let codePoints = 0;
  let lines = text.length > 0 ? 1 : 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // A high surrogate followed by a low one is a single code point.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    if (c == 0x0a) lines++;
    codePoints++;
  }
  const s = new ObjectWriter()
    .int("utf16", text.length)
    .int("codePoints", codePoints)
    .int("utf8Bytes", String.UTF8.byteLength(text))
    .int("lines", lines)
    .string("upper", text.toUpperCase());
  return Result.text(codePoints.toString() + " code points").withStructured(s.toString());
}

function checkedRatio(ctx: Context, args: Args): Result {
  const a = args.number("a");
  const b = args.number("b");
  assert(b != 0, "b must not be zero");
  return Result.text((a / b).toString());
}
