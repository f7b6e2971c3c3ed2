const HEX = "0123456789abcdef";

/**
 * Returns s as a JSON string literal (quoted and escaped). Surrogate pairs
 * pass through (they become one 4-byte UTF-8 sequence); a lone surrogate,
 * which UTF-8 cannot carry, becomes U+FFFD. (json-as 1.3's stringify
 * escapes any code unit whose low byte is a control character, such as the
 * 0xDE00 of U+1F600, and so splits surrogate pairs: the SDK does not use it
 * for strings.)
 */
export function quote(s: string): string {
  const n = s.length;
  let out = "";
  let start = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    let esc: string | null = null;
    if (c == 0x22) esc = "\\\"";
    else if (c == 0x5c) esc = "\\\\";
    else if (c == 0x0a) esc = "\\n";
    else if (c == 0x0d) esc = "\\r";
    else if (c == 0x09) esc = "\\t";
    else if (c < 0x20) esc = "\\u00" + HEX.charAt(c >> 4) + HEX.charAt(c & 15);
    else if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < n ? s.charCodeAt(i + 1) : 0;
      if (d >= 0xdc00 && d <= 0xdfff) {
        i++;
        continue;
      }
      esc = "\\ufffd";
    } else if (c >= 0xdc00 && c <= 0xdfff) esc = "\\ufffd";
    if (esc === null) continue;
    out += s.slice(start, i) + esc;
    start = i + 1;
  }
  if (start == 0) return "\"" + s + "\"";
  return "\"" + out + s.slice(start) + "\"";
}

/**
 * Builds a JSON object from fields. Values are JSON text: pass strings
 * through quote(). Fields whose value is null are left out.
 */
export class ObjectWriter {
  private parts: string[] = [];

  /** Adds key with a JSON value given as text (a number, object, quoted string, ...). */
  raw(key: string, json: string | null): ObjectWriter {
    if (json !== null) this.parts.push(quote(key) + ":" + json);
    return this;
  }

  string(key: string, value: string | null): ObjectWriter {
    if (value !== null) this.raw(key, quote(value));
    return this;
  }

  int(key: string, value: i64): ObjectWriter {
    return this.raw(key, value.toString());
  }

  float(key: string, value: f64): ObjectWriter {
    // JSON has no NaN or infinities.
    return this.raw(key, isFinite(value) ? formatFloat(value) : "null");
  }

  bool(key: string, value: bool): ObjectWriter {
    return this.raw(key, value ? "true" : "false");
  }

  toString(): string {
    return "{" + this.parts.join(",") + "}";
  }
}

/** Formats v as JSON: integral values without a fraction ("3", not "3.0"). */
export function formatFloat(v: f64): string {
  if (v == Math.trunc(v) && Math.abs(v) < 9007199254740992) return (<i64>v).toString();
  return v.toString();
}

/** Builds a JSON array from JSON texts. */
export function array(items: string[]): string {
  return "[" + items.join(",") + "]";
}
