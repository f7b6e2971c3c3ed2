import { JSON } from "json-as";

/** Returns s as a JSON string literal (quoted and escaped). */
export function quote(s: string): string {
  return JSON.stringify<string>(s);
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
