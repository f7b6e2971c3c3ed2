// notes: reads a project file through warden.fs and keeps a note of it in
// the project memory store (warden.memory). Needs grants fs.read and
// memory: read-write.
import { Args, Context, Descriptor, Result, register, fsRead, memoryGet, memorySet, quote, ObjectWriter } from "../assembly";
export * from "../assembly/abi";

register(
  new Descriptor(
    "remember_file",
    "Reads a project file and stores its first line as a note.",
    `{"type":"object","properties":{"path":{"type":"string"},"topic":{"type":"string"}},"required":["path","topic"]}`,
  ).set("capabilities", `{"fs":{"read":["."]},"memory":"read-write"}`),
  rememberFile,
);

register(
  new Descriptor(
    "recall",
    "Returns a note stored by remember_file.",
    `{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"]}`,
  ).readOnly().set("capabilities", `{"memory":"read"}`),
  recall,
);

function rememberFile(ctx: Context, args: Args): Result {
  const path = args.string("path");
  const topic = args.string("topic");
  if (path === null || topic === null) return Result.invalidArguments("path and topic must be strings");
  const file = fsRead(path);
  // A refused or missing path keeps the host's kind (denied, not_found).
  if (!file.ok) return Result.error(file.errorKind, file.errorMessage);
  const content = file.string("content");
  const nl = content.indexOf("\n");
  const first = nl < 0 ? content : content.slice(0, nl);
  const saved = memorySet(topic, first);
  if (!saved.ok) return Result.error(saved.errorKind, saved.errorMessage);
  return Result.text("remembered " + quote(first)).withStructured(
    new ObjectWriter().string("topic", topic).string("note", first).toString(),
  );
}

function recall(ctx: Context, args: Args): Result {
  const topic = args.string("topic");
  if (topic === null) return Result.invalidArguments("topic must be a string");
  const note = memoryGet(topic);
  if (!note.ok) return Result.error(note.errorKind, note.errorMessage);
  return Result.text(note.string("value"));
}
