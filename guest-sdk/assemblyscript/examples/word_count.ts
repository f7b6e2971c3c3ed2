// word_count: the tool every warden SDK's first example implements.
import { Args, Context, Descriptor, Result, register } from "../assembly";
export * from "../assembly/abi";

register(
  new Descriptor(
    "word_count",
    "Counts the words in a text.",
    `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
  )
    .output(`{"type":"object","properties":{"words":{"type":"integer"}},"required":["words"]}`)
    .readOnly(),
  wordCount,
);

function wordCount(ctx: Context, args: Args): Result {
  const text = args.string("text");
  if (text === null) return Result.invalidArguments("text must be a string");
  const n = countWords(text);
  return Result.text(n.toString() + " words").withStructured(`{"words":` + n.toString() + "}");
}

// countWords counts maximal runs of characters other than ASCII whitespace.
function countWords(text: string): i32 {
  let words = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const space = c == 0x20 || (c >= 0x09 && c <= 0x0d);
    if (!space && !inWord) words++;
    inWord = !space;
  }
  return words;
}
