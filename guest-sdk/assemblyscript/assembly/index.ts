// The warden AssemblyScript guest SDK: tools, arguments, results, errors and
// the host capabilities of docs/abi.md. A module's entry file registers its
// tools at top level and re-exports the ABI:
//
//   export * from "@warden-run/sdk/assembly/abi";
//
// See README.md.

import { JSON } from "json-as";
import { ObjectWriter, quote, array, formatFloat } from "./json";
import { importLog, importProgress } from "./host";
import { callHost } from "./capability";

export { JSON } from "json-as";
export { ObjectWriter, quote, array, formatFloat } from "./json";
export * from "./capability";

// ---------------------------------------------------------------- errors

/** Error kinds a tool may report (docs/abi.md, warden_call). */
export namespace Kind {
  export const InvalidArguments = "invalid_arguments";
  export const NotFound = "not_found";
  export const Denied = "denied";
  export const Failed = "failed";
  export const Cancelled = "cancelled";
}

/** A typed failure: a host capability's {"error"} reply, or one a tool makes. */
export class ToolError {
  constructor(public kind: string, public message: string) {}

  toString(): string {
    return this.kind + ": " + this.message;
  }
}

/** The kinds a guest may report; any other is sent as failed (the host would make it bad_output and lose the message). */
export function guestKind(kind: string): bool {
  return (
    kind == Kind.InvalidArguments || kind == Kind.NotFound || kind == Kind.Denied ||
    kind == Kind.Failed || kind == Kind.Cancelled
  );
}

// ---------------------------------------------------------------- descriptors

/** The values of Descriptor.taskSupport (MCP's execution.taskSupport). */
export namespace TaskSupport {
  export const Forbidden = "forbidden";
  export const Optional = "optional";
  export const Required = "required";
}

/**
 * A tool's descriptor (docs/abi.md, warden_describe). Schemas are JSON text.
 * Optional fields are set with the chaining methods; set() adds any other
 * descriptor field (version, tags, timeoutMs, capabilities, ...) as JSON.
 */
export class Descriptor {
  outputSchema: string | null = null;
  title: string | null = null;
  private annotations: ObjectWriter | null = null;
  private extra: ObjectWriter = new ObjectWriter();

  constructor(public name: string, public description: string, public inputSchema: string) {}

  /** Sets the output schema: every successful result must then carry matching structuredContent. */
  output(schema: string): Descriptor {
    this.outputSchema = schema;
    return this;
  }

  withTitle(title: string): Descriptor {
    this.title = title;
    return this;
  }

  /** Sets an annotation hint: readOnlyHint, destructiveHint, idempotentHint or openWorldHint. */
  hint(name: string, value: bool): Descriptor {
    let a = this.annotations;
    if (a === null) {
      a = new ObjectWriter();
      this.annotations = a;
    }
    a.bool(name, value);
    return this;
  }

  readOnly(): Descriptor {
    return this.hint("readOnlyHint", true);
  }

  /**
   * Says whether the tool may (TaskSupport.Optional), must
   * (TaskSupport.Required) or must not (TaskSupport.Forbidden, the default)
   * run as an MCP task: the descriptor's execution.taskSupport. A task runs
   * under the task budget (tools.limits.<tool>.task_timeout, task_fuel)
   * instead of the interactive timeout; config may override it
   * (tools.tasks; docs/tasks.md).
   */
  taskSupport(value: string): Descriptor {
    return this.set("execution", new ObjectWriter().string("taskSupport", value).toString());
  }

  /** Adds a descriptor field with a JSON value, e.g. set("capabilities", `{"fs":{"read":["."]}}`). */
  set(key: string, json: string): Descriptor {
    this.extra.raw(key, json);
    return this;
  }

  toJSON(): string {
    const w = new ObjectWriter()
      .string("name", this.name)
      .string("description", this.description)
      .raw("inputSchema", this.inputSchema)
      .raw("outputSchema", this.outputSchema)
      .string("title", this.title);
    const a = this.annotations;
    if (a !== null) w.raw("annotations", a.toString());
    const extra = this.extra.toString();
    if (extra == "{}") return w.toString();
    const base = w.toString();
    return base.slice(0, base.length - 1) + "," + extra.slice(1);
  }
}

// ---------------------------------------------------------------- results

/** A content block: MCP content as JSON text. */
export namespace Block {
  export function text(s: string): string {
    return new ObjectWriter().string("type", "text").string("text", s).toString();
  }
  /** An image block; data is base64. */
  export function image(base64: string, mimeType: string): string {
    return new ObjectWriter().string("type", "image").string("data", base64).string("mimeType", mimeType).toString();
  }
  /** An audio block; data is base64. */
  export function audio(base64: string, mimeType: string): string {
    return new ObjectWriter().string("type", "audio").string("data", base64).string("mimeType", mimeType).toString();
  }
  export function resourceLink(uri: string, name: string): string {
    return new ObjectWriter().string("type", "resource_link").string("uri", uri).string("name", name).toString();
  }
  /** An embedded text resource. */
  export function embeddedText(uri: string, mimeType: string, text: string): string {
    const r = new ObjectWriter().string("uri", uri).string("mimeType", mimeType).string("text", text);
    return new ObjectWriter().string("type", "resource").raw("resource", r.toString()).toString();
  }
}

/** A tool's answer: content blocks and structured content, or an error. */
export class Result {
  content: string[] = [];
  structured: string | null = null;
  details: string | null = null;
  nextCursor: string | null = null;
  error: ToolError | null = null;

  /** A result of one text block. */
  static text(s: string): Result {
    const r = new Result();
    r.content.push(Block.text(s));
    return r;
  }

  /** A result whose structuredContent is the JSON object json, repeated as its text block. */
  static json(json: string): Result {
    return Result.text(json).withStructured(json);
  }

  /** A result of the given blocks (JSON texts, see Block). */
  static blocks(blocks: string[]): Result {
    const r = new Result();
    r.content = blocks;
    return r;
  }

  static error(kind: string, message: string): Result {
    const r = new Result();
    r.error = new ToolError(kind, message);
    return r;
  }

  static fromError(e: ToolError): Result {
    return Result.error(e.kind, e.message);
  }

  static invalidArguments(message: string): Result {
    return Result.error(Kind.InvalidArguments, message);
  }
  static notFound(message: string): Result {
    return Result.error(Kind.NotFound, message);
  }
  static denied(message: string): Result {
    return Result.error(Kind.Denied, message);
  }
  static failed(message: string): Result {
    return Result.error(Kind.Failed, message);
  }
  static cancelled(message: string): Result {
    return Result.error(Kind.Cancelled, message);
  }

  /** Sets structuredContent (a JSON object as text); the blocks stay as they are. */
  withStructured(json: string): Result {
    this.structured = json;
    return this;
  }

  /** Sets details (JSON text): kept in logs, never shown to the model. */
  withDetails(json: string): Result {
    this.details = json;
    return this;
  }

  withNextCursor(cursor: string): Result {
    this.nextCursor = cursor;
    return this;
  }

  /** The response JSON of warden_call. */
  toJSON(): string {
    const e = this.error;
    if (e !== null) {
      let kind = e.kind;
      let message = e.message;
      if (!guestKind(kind)) {
        message = kind + ": " + message;
        kind = Kind.Failed;
      }
      const err = new ObjectWriter().string("kind", kind).string("message", message);
      return new ObjectWriter().raw("error", err.toString()).raw("details", this.details).toString();
    }
    return new ObjectWriter()
      .raw("content", array(this.content))
      .raw("structuredContent", this.structured)
      .raw("details", this.details)
      .string("nextCursor", this.nextCursor)
      .toString();
  }
}

// ---------------------------------------------------------------- arguments

/** A call's arguments: a JSON object, already validated against the tool's inputSchema by the host. */
export class Args {
  constructor(public obj: JSON.Obj, public raw: string) {}

  has(key: string): bool {
    return this.obj.has(key);
  }

  /** The value of key, or null when it is missing. */
  value(key: string): JSON.Value | null {
    return this.obj.get(key);
  }

  /** The string at key, or null when it is missing or not a string. */
  string(key: string): string | null {
    const v = this.obj.get(key);
    if (v === null || v.type != JSON.Types.String) return null;
    return v.get<string>();
  }

  /** The number at key, or def when it is missing or not a number. */
  number(key: string, def: f64 = 0): f64 {
    const v = this.obj.get(key);
    if (v === null) return def;
    const t = v.type;
    if (t == JSON.Types.F64) return v.get<f64>();
    if (t == JSON.Types.F32) return <f64>v.get<f32>();
    if (t == JSON.Types.I64) return <f64>v.get<i64>();
    if (t == JSON.Types.I32) return <f64>v.get<i32>();
    if (t == JSON.Types.U64) return <f64>v.get<u64>();
    if (t == JSON.Types.U32) return <f64>v.get<u32>();
    return def;
  }

  /** The number at key truncated to an integer, or def. */
  int(key: string, def: i64 = 0): i64 {
    const v = this.obj.get(key);
    if (v === null) return def;
    const n = this.number(key, NaN);
    return isFinite(n) ? <i64>n : def;
  }

  /** The boolean at key, or def when it is missing or not a boolean. */
  bool(key: string, def: bool = false): bool {
    const v = this.obj.get(key);
    if (v === null || v.type != JSON.Types.Bool) return def;
    return v.get<bool>();
  }

  /** The JSON text of the value at key, or null when it is missing. */
  json(key: string): string | null {
    const v = this.obj.get(key);
    return v === null ? null : v.toString();
  }
}

// ---------------------------------------------------------------- context

/** Log levels of warden.log. */
export namespace Level {
  export const Debug: i32 = 0;
  export const Info: i32 = 1;
  export const Warning: i32 = 2;
  export const Error: i32 = 3;
}

/** What a tool knows about its call, and its channel to the host's observer. */
export class Context {
  constructor(public callId: string, public cursor: string) {}

  /** Sends a log line (budgeted by the host: 1000 lines, 1 MiB per call by default). */
  log(level: i32, message: string): void {
    const b = String.UTF8.encode(message, false, String.UTF8.ErrorMode.REPLACE);
    importLog(level, b.byteLength == 0 ? 0 : (<u64>changetype<usize>(b) << 32) | <u64>b.byteLength);
  }

  /** Reports progress; done must increase from one report to the next. total <= 0 leaves it out. */
  progress(done: f64, total: f64 = 0, message: string = ""): void {
    const w = new ObjectWriter().float("progress", done);
    if (total > 0) w.float("total", total);
    if (message.length > 0) w.string("message", message);
    const b = String.UTF8.encode(w.toString(), false, String.UTF8.ErrorMode.REPLACE);
    importProgress((<u64>changetype<usize>(b) << 32) | <u64>b.byteLength);
  }
}

// ---------------------------------------------------------------- registry

/** A tool's implementation. It may not capture locals (AssemblyScript has no closures). */
export type Handler = (ctx: Context, args: Args) => Result;

class Entry {
  constructor(public descriptor: Descriptor, public handler: Handler) {}
}

const tools: Entry[] = [];

/** Adds a tool to the module. Call it at the top level of your entry file. Duplicate names abort. */
export function register(descriptor: Descriptor, handler: Handler): void {
  const name = descriptor.name.toLowerCase();
  for (let i = 0; i < tools.length; i++) {
    assert(tools[i].descriptor.name.toLowerCase() != name, "warden: tool " + descriptor.name + " registered twice");
  }
  tools.push(new Entry(descriptor, handler));
}

/** The descriptor document of warden_describe. */
export function describe(): string {
  const ds: string[] = [];
  for (let i = 0; i < tools.length; i++) ds.push(tools[i].descriptor.toJSON());
  return new ObjectWriter().raw("tools", array(ds)).toString();
}

/** Runs one warden_call request (JSON text) and returns the response JSON. */
export function dispatch(request: string): string {
  const req = JSON.parse<JSON.Obj>(request);
  const nameV = req.get("tool");
  if (nameV === null || nameV.type != JSON.Types.String) {
    return Result.failed("request has no tool name").toJSON();
  }
  const name = nameV.get<string>();
  let entry: Entry | null = null;
  for (let i = 0; i < tools.length; i++) {
    if (tools[i].descriptor.name == name) {
      entry = tools[i];
      break;
    }
  }
  if (entry === null) return Result.notFound("this module has no tool " + quote(name)).toJSON();
  const callId = req.get("callId");
  const cursor = req.get("cursor");
  const ctx = new Context(
    callId !== null && callId.type == JSON.Types.String ? callId.get<string>() : "",
    cursor !== null && cursor.type == JSON.Types.String ? cursor.get<string>() : "",
  );
  const argsV = req.get("arguments");
  let obj: JSON.Obj;
  let raw = "{}";
  if (argsV === null || argsV.type == JSON.Types.Null) {
    obj = new JSON.Obj();
  } else if (argsV.type == JSON.Types.Object) {
    obj = argsV.get<JSON.Obj>();
    raw = obj.toString();
  } else {
    return Result.invalidArguments("arguments must be a JSON object").toJSON();
  }
  return entry.handler(ctx, new Args(obj, raw)).toJSON();
}
