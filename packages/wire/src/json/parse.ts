/**
 * A strict JSON parser for message payloads. It exists instead of `JSON.parse` because u64
 * fields (producer ids, i64 counter values) must survive exactly: an integer outside the
 * safe range parses as a `bigint`. Nesting is bounded by `JSON_DEPTH_MAX`; any syntax error
 * is `InvalidJsonError`, never anything else.
 */
import { InvalidJsonError } from '../errors.js';
import { JSON_DEPTH_MAX } from '../limits.js';

export type JsonValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const STRING_PLAIN = /[^"\\\u0000-\u001f]*/y;

/** A run of 16+ digits may be an integer beyond 2^53, which `JSON.parse` would round. */
const LONG_DIGITS = /[0-9]{16}/;

/**
 * Parses with the engine's `JSON.parse` when no number could lose precision, falling back
 * to the exact parser below otherwise or on any syntax error (which it then reports typed).
 */
export function parseJsonFast(text: string): JsonValue {
  if (!LONG_DIGITS.test(text)) {
    try {
      return JSON.parse(text) as JsonValue;
    } catch {
      // fall through: the exact parser reports the typed error with its position
    }
  }
  return parseJson(text);
}

export function parseJson(text: string): JsonValue {
  const parser = new Parser(text);
  parser.skipSpace();
  const value = parser.value(0);
  parser.skipSpace();
  if (parser.pos !== text.length) parser.fail('unexpected trailing characters');
  return value;
}

class Parser {
  pos = 0;
  constructor(private readonly text: string) {}

  fail(reason: string): never {
    throw new InvalidJsonError(reason, this.pos);
  }

  skipSpace(): void {
    const t = this.text;
    while (this.pos < t.length) {
      const c = t.charCodeAt(this.pos);
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
      this.pos++;
    }
  }

  value(depth: number): JsonValue {
    if (depth > JSON_DEPTH_MAX) this.fail(`nesting deeper than ${JSON_DEPTH_MAX}`);
    const c = this.text[this.pos];
    if (c === '{') return this.object(depth);
    if (c === '[') return this.array(depth);
    if (c === '"') return this.string();
    if (c === 't') return this.literal('true', true);
    if (c === 'f') return this.literal('false', false);
    if (c === 'n') return this.literal('null', null);
    return this.number();
  }

  literal<T>(word: string, value: T): T {
    if (!this.text.startsWith(word, this.pos)) this.fail('unexpected token');
    this.pos += word.length;
    return value;
  }

  number(): number | bigint {
    NUMBER.lastIndex = this.pos;
    const match = NUMBER.exec(this.text);
    if (!match) this.fail('unexpected token');
    const raw = match[0];
    this.pos += raw.length;
    if (match[1] === undefined && match[2] === undefined) {
      const n = Number(raw);
      return Number.isSafeInteger(n) ? n : BigInt(raw);
    }
    return Number(raw);
  }

  string(): string {
    this.pos++; // opening quote
    let out = '';
    for (;;) {
      STRING_PLAIN.lastIndex = this.pos;
      const plain = STRING_PLAIN.exec(this.text)![0];
      out += plain;
      this.pos += plain.length;
      const c = this.text[this.pos];
      if (c === '"') {
        this.pos++;
        return out;
      }
      if (c !== '\\') this.fail(c === undefined ? 'unterminated string' : 'control character');
      out += this.escape();
    }
  }

  escape(): string {
    const c = this.text[this.pos + 1];
    this.pos += 2;
    switch (c) {
      case '"':
        return '"';
      case '\\':
        return '\\';
      case '/':
        return '/';
      case 'b':
        return '\b';
      case 'f':
        return '\f';
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case 'u': {
        const hex = this.text.slice(this.pos, this.pos + 4);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail('bad unicode escape');
        this.pos += 4;
        return String.fromCharCode(Number.parseInt(hex, 16));
      }
      default:
        this.pos -= 2;
        return this.fail('bad escape');
    }
  }

  array(depth: number): JsonValue[] {
    this.pos++;
    const out: JsonValue[] = [];
    this.skipSpace();
    if (this.text[this.pos] === ']') {
      this.pos++;
      return out;
    }
    for (;;) {
      this.skipSpace();
      out.push(this.value(depth + 1));
      this.skipSpace();
      const c = this.text[this.pos++];
      if (c === ']') return out;
      if (c !== ',') this.fail('expected , or ]');
    }
  }

  object(depth: number): JsonObject {
    this.pos++;
    const out: JsonObject = Object.create(null);
    this.skipSpace();
    if (this.text[this.pos] === '}') {
      this.pos++;
      return out;
    }
    for (;;) {
      this.skipSpace();
      if (this.text[this.pos] !== '"') this.fail('expected a string key');
      const key = this.string();
      this.skipSpace();
      if (this.text[this.pos++] !== ':') this.fail('expected :');
      this.skipSpace();
      out[key] = this.value(depth + 1);
      this.skipSpace();
      const c = this.text[this.pos++];
      if (c === '}') return out;
      if (c !== ',') this.fail('expected , or }');
    }
  }
}
