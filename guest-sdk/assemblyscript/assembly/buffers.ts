// Memory handed across the ABI. Everything the host writes into (requests,
// capability replies) comes from warden_alloc, which takes raw blocks from
// the allocator (heap.alloc: not managed by the GC, so no collection can
// move or free them while the host writes). Each block is freed as soon as
// its bytes are decoded into a string, and any block the host allocated but
// never handed back is freed at the start of the next export, so a session
// serving thousands of calls reuses the same few blocks.

// Outstanding blocks: address -> size.
const lent = new Map<usize, usize>();

// The last response. It lives in a global so the collection at the end of
// an export keeps it; the host copies it before calling into the module
// again, and the next response replaces (and so frees) it.
let response: ArrayBuffer = new ArrayBuffer(0);

export function allocLent(size: usize): usize {
  // A zero-size request still gets a unique, freeable block.
  const ptr = heap.alloc(size > 0 ? size : 1);
  lent.set(ptr, size);
  return ptr;
}

/** Decodes the range ptr+len, which must be (part of) a lent block, and frees the block. */
export function takeLent(ptr: usize, len: usize): string | null {
  if (ptr == 0 && len == 0) return "";
  if (!lent.has(ptr)) return null;
  const size = lent.get(ptr);
  if (len > size) return null;
  const s = String.UTF8.decodeUnsafe(ptr, len);
  lent.delete(ptr);
  heap.free(ptr);
  return s;
}

/** Frees every lent block: the host never reads them once an export has started. */
export function freeAllLent(): void {
  const keys = lent.keys();
  for (let i = 0; i < keys.length; i++) heap.free(keys[i]);
  lent.clear();
}

/** UTF-8 encodes s. Lone surrogates (invalid in UTF-8 and so in the ABI's JSON) become U+FFFD. */
export function utf8(s: string): ArrayBuffer {
  return String.UTF8.encode(s, false, String.UTF8.ErrorMode.REPLACE);
}

export function pack(ptr: usize, len: usize): u64 {
  if (len == 0) return 0;
  return (<u64>ptr << 32) | <u64>(<u32>len);
}

export function packBuffer(b: ArrayBuffer): u64 {
  return pack(changetype<usize>(b), <usize>b.byteLength);
}

/** Keeps s as the response of the running export and returns its packed range. */
export function respond(s: string): u64 {
  response = utf8(s);
  return packBuffer(response);
}
