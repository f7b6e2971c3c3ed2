// __NAME__: a warden tool. Tools register at the top level; the export line
// gives the module the exports warden calls (docs/abi.md).
import { Args, Context, Descriptor, Result, register } from "@warden-run/sdk/assembly";
export * from "@warden-run/sdk/assembly/abi";

register(
  new Descriptor(
    "__NAME__",
    "Counts the words in a text.",
    `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
  )
    .output(`{"type":"object","properties":{"words":{"type":"integer"}},"required":["words"]}`)
    .readOnly(),
  call,
);

function call(ctx: Context, args: Args): Result {
  const text = args.string("text");
  if (text === null) return Result.invalidArguments("text must be a string");
  // Words are maximal runs of characters other than ASCII whitespace.
  let words = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const space = c == 0x20 || (c >= 0x09 && c <= 0x0d);
    if (!space && !inWord) words++;
    inWord = !space;
  }
  return Result.text(words.toString() + " words").withStructured(`{"words":` + words.toString() + "}");
}
