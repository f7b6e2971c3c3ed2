// The capability imports (fs, memory, lsp, net, env, elicit, sample, roots,
// ask) as functions taking and returning JSON. Each request is checked by
// the host against the tool's grants in config.yaml; a refusal comes back as
// a reply with an error (kind "denied"), never as a trap.

import { JSON } from "json-as";
import { ObjectWriter } from "./json";
import {
  importFS, importMemory, importLSP, importNet, importEnv,
  importElicit, importSample, importRoots, importAsk,
} from "./host";
import { takeLent, utf8, packBuffer } from "./buffers";

/** A capability's reply: result (a JSON value) or an error with the host's kind. */
export class HostReply {
  /** The "result" value; null on an error. */
  result: JSON.Value | null = null;
  /** The error's kind ("denied", "not_found", ...) and message; both empty on success. */
  errorKind: string = "";
  errorMessage: string = "";

  get ok(): bool {
    return this.errorKind.length == 0;
  }

  /** The result as an object (empty when it is not one, or on an error). */
  get obj(): JSON.Obj {
    const r = this.result;
    if (r === null || r.type != JSON.Types.Object) return new JSON.Obj();
    return r.get<JSON.Obj>();
  }

  /** The string field key of the result object, or def. */
  string(key: string, def: string = ""): string {
    const v = this.obj.get(key);
    if (v === null || v.type != JSON.Types.String) return def;
    return v.get<string>();
  }

  /** The JSON text of the result; "null" on an error. */
  json(): string {
    const r = this.result;
    return r === null ? "null" : r.toString();
  }

  /** "kind: message" of an error reply. */
  toString(): string {
    return this.ok ? this.json() : this.errorKind + ": " + this.errorMessage;
  }

  static failure(kind: string, message: string): HostReply {
    const r = new HostReply();
    r.errorKind = kind;
    r.errorMessage = message;
    return r;
  }
}

/**
 * Sends request (JSON text) to the warden.<capability> import and decodes its
 * reply. capability is fs, memory, lsp, net, env, elicit, sample, roots or ask.
 */
export function callHost(capability: string, request: string): HostReply {
  const b = utf8(request);
  const packed = packBuffer(b);
  let reply: u64 = 0;
  if (capability == "fs") reply = importFS(packed);
  else if (capability == "memory") reply = importMemory(packed);
  else if (capability == "lsp") reply = importLSP(packed);
  else if (capability == "net") reply = importNet(packed);
  else if (capability == "env") reply = importEnv(packed);
  else if (capability == "elicit") reply = importElicit(packed);
  else if (capability == "sample") reply = importSample(packed);
  else if (capability == "roots") reply = importRoots(packed);
  else if (capability == "ask") reply = importAsk(packed);
  else return HostReply.failure("failed", "unknown host capability " + capability);
  const ptr = <usize>(reply >> 32);
  const len = <usize>(reply & 0xffffffff);
  const text = takeLent(ptr, len);
  if (text === null) {
    return HostReply.failure("failed", capability + " reply range was not allocated by warden_alloc");
  }
  const env = JSON.parse<JSON.Obj>(text);
  const err = env.get("error");
  if (err !== null && err.type == JSON.Types.Object) {
    const e = err.get<JSON.Obj>();
    const k = e.get("kind");
    const m = e.get("message");
    return HostReply.failure(
      k !== null && k.type == JSON.Types.String ? k.get<string>() : "failed",
      m !== null && m.type == JSON.Types.String ? m.get<string>() : "",
    );
  }
  const r = new HostReply();
  r.result = env.get("result");
  return r;
}

// The operations most tools use, as functions. Every other operation (and
// every optional field) is reachable through callHost with the request of
// docs/abi.md.

/** warden.fs read: the whole file (up to the host's limit) in result.content. */
export function fsRead(path: string): HostReply {
  return callHost("fs", new ObjectWriter().string("op", "read").string("path", path).toString());
}
/** warden.fs write: creates or replaces a file with content. */
export function fsWrite(path: string, content: string): HostReply {
  return callHost("fs", new ObjectWriter().string("op", "write").string("path", path).string("content", content).toString());
}
/** warden.fs append: adds content at the end of a file. */
export function fsAppend(path: string, content: string): HostReply {
  return callHost("fs", new ObjectWriter().string("op", "append").string("path", path).string("content", content).toString());
}
/** warden.fs list: the entries of a directory. */
export function fsList(path: string): HostReply {
  return callHost("fs", new ObjectWriter().string("op", "list").string("path", path).toString());
}
/** warden.fs stat. */
export function fsStat(path: string): HostReply {
  return callHost("fs", new ObjectWriter().string("op", "stat").string("path", path).toString());
}
/** warden.fs glob: paths matching pattern. */
export function fsGlob(pattern: string): HostReply {
  return callHost("fs", new ObjectWriter().string("op", "glob").string("pattern", pattern).toString());
}
/** warden.fs search: lines matching an RE2 pattern under path ("" for every granted path). */
export function fsSearch(pattern: string, path: string = ""): HostReply {
  const w = new ObjectWriter().string("op", "search").string("pattern", pattern);
  if (path.length > 0) w.string("path", path);
  return callHost("fs", w.toString());
}
/** warden.fs mkdir, with parents. */
export function fsMkdir(path: string): HostReply {
  return callHost("fs", new ObjectWriter().string("op", "mkdir").string("path", path).toString());
}
/** warden.fs remove. */
export function fsRemove(path: string, recursive: bool = false): HostReply {
  return callHost("fs", new ObjectWriter().string("op", "remove").string("path", path).bool("recursive", recursive).toString());
}

/** warden.memory get: result.value holds the topic's text. */
export function memoryGet(topic: string): HostReply {
  return callHost("memory", new ObjectWriter().string("op", "get").string("topic", topic).toString());
}
/** warden.memory set. */
export function memorySet(topic: string, value: string): HostReply {
  return callHost("memory", new ObjectWriter().string("op", "set").string("topic", topic).string("value", value).toString());
}
/** warden.memory append (creates the topic; no separator added). */
export function memoryAppend(topic: string, value: string): HostReply {
  return callHost("memory", new ObjectWriter().string("op", "append").string("topic", topic).string("value", value).toString());
}
/** warden.memory list, under prefix ("" for all). */
export function memoryList(prefix: string = ""): HostReply {
  const w = new ObjectWriter().string("op", "list");
  if (prefix.length > 0) w.string("prefix", prefix);
  return callHost("memory", w.toString());
}
/** warden.memory delete. */
export function memoryDelete(topic: string): HostReply {
  return callHost("memory", new ObjectWriter().string("op", "delete").string("topic", topic).toString());
}

/** warden.env get: result.value holds the granted value. */
export function envGet(key: string): HostReply {
  return callHost("env", new ObjectWriter().string("op", "get").string("key", key).toString());
}
/** warden.env list: the granted keys that have a value. */
export function envList(): HostReply {
  return callHost("env", `{"op":"list"}`);
}

/** warden.net request. body "" sends none; headers is a JSON object text or null. */
export function netRequest(method: string, url: string, body: string = "", headers: string | null = null): HostReply {
  const w = new ObjectWriter().string("op", "request").string("method", method).string("url", url).raw("headers", headers);
  if (body.length > 0) w.string("body", body);
  return callHost("net", w.toString());
}

/** warden.lsp: any operation of docs/abi.md, e.g. lsp(`{"op":"documentSymbol","path":"a.go"}`). */
export function lsp(request: string): HostReply {
  return callHost("lsp", request);
}

/** warden.elicit: asks the person (key "" lets warden name the request); params is MCP elicitation/create params as JSON text. */
export function elicit(key: string, params: string): HostReply {
  return callHost("elicit", new ObjectWriter().string("key", key.length > 0 ? key : null).raw("params", params).toString());
}
/** warden.sample: asks the client's model; params is MCP sampling/createMessage params as JSON text. */
export function sample(key: string, params: string): HostReply {
  return callHost("sample", new ObjectWriter().string("key", key.length > 0 ? key : null).raw("params", params).toString());
}
/** warden.roots: the client's roots. */
export function roots(): HostReply {
  return callHost("roots", `{"params":{}}`);
}
/** warden.ask: several questions at once; requests is a JSON array text of {key, method, params}. */
export function ask(requests: string): HostReply {
  return callHost("ask", new ObjectWriter().raw("requests", requests).toString());
}
