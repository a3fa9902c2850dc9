/**
 * Encodes and decodes JSON messages by walking the field table (message-specs.ts). Encoding
 * writes `type` first and then each field in table order, building the JSON text by hand so
 * the bytes match the reference's serializer exactly. Decoding is strict about the fields
 * it knows, ignores fields it does not, and maps an unknown `type` to `UnknownMessage`.
 */
import { FieldRangeError, InvalidMessageError, OffsetOutOfRangeError } from '../errors.js';
import { decodeUtf8 } from '../bytes/reader.js';
import { checkWellFormed, jsonUtf8 } from '../bytes/writer.js';
import { encodeFrame, writeFrameHeader } from '../frame/header.js';
import {
  FRAME_HEADER_BYTES,
  FRAME_PAYLOAD_BYTES_MAX_DEFAULT,
  OFFSET_MAX,
  JSON_LIST_ITEMS_MAX,
} from '../limits.js';
import { base64Decode, base64DecodeInto, base64DecodedLength, base64Encode } from './base64.js';
import { type FieldSpec, type Kind, MESSAGE_SPECS } from './message-specs.js';
import { type JsonObject, type JsonValue, parseJsonFast } from './parse.js';
import type {
  CacheEventMessage,
  GroupRecord,
  GroupRecordsMessage,
  Message,
  UnknownMessage,
} from './message-types.js';

const U64_MAX = 0xffff_ffff_ffff_ffffn;
const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

type Fields = { [key: string]: unknown };

/** The UTF-8 JSON payload of a message (no frame header). */
export function encodeMessagePayload(message: Message): Uint8Array {
  return jsonUtf8(messageJson(message));
}

const UTF8 = new TextEncoder();

/** A complete FLX1 frame (flags 0) carrying the message as JSON. */
export function encodeMessage(message: Message): Uint8Array {
  const text = messageJson(message);
  // ASCII text (base64, digits, plain names: a poll answer's kilobytes) is its own UTF-8, so it
  // is encoded straight into the frame instead of into a buffer that is then copied. Text with
  // other characters does not fit the room left and takes the copying path.
  if (text.length <= FRAME_PAYLOAD_BYTES_MAX_DEFAULT) {
    const frame = new Uint8Array(FRAME_HEADER_BYTES + text.length);
    if (UTF8.encodeInto(text, frame.subarray(FRAME_HEADER_BYTES)).read === text.length) {
      writeFrameHeader(frame, 0, 0, text.length);
      return frame;
    }
  }
  return encodeFrame(0, jsonUtf8(text));
}

/** The JSON text of a message, byte-identical to the reference encoder's. */
export function messageJson(message: Message): string {
  if (message.type === 'group_records') {
    const fast = groupRecordsJson(message);
    if (fast !== undefined) return fast;
  } else if (message.type === 'cache_event') {
    const fast = cacheEventJson(message);
    if (fast !== undefined) return fast;
  }
  return messageJsonByTable(message);
}

/** The JSON text of a message by its field table (what the fast paths must equal). */
export function messageJsonByTable(message: Message): string {
  const spec = MESSAGE_SPECS[message.type];
  if (spec === undefined || message.type === 'unknown') {
    throw new FieldRangeError('message type', `${JSON.stringify(message.type)} cannot be encoded`);
  }
  let out = `{"type":${JSON.stringify(message.type)}`;
  out += writeFields(spec, message as unknown as Fields, message.type, true);
  return `${out}}`;
}

/**
 * `group_records` is a queue's hot answer (up to 1,000 records): the common shape (no
 * publisher, no timestamp, nothing skipped) is written without walking the field table, to the
 * same bytes. Anything else answers undefined and takes the table path, which also reports
 * bad fields.
 */
function groupRecordsJson(message: GroupRecordsMessage): string | undefined {
  const records: unknown = message.records;
  const rid = message.request_id;
  if (!Array.isArray(records) || !isUint(rid, OFFSET_MAX)) return undefined;
  let out = '{"type":"group_records","records":[';
  for (let i = 0; i < records.length; i++) {
    const r = records[i] as GroupRecord | null;
    if (typeof r !== 'object' || r === null) return undefined;
    const attempts = r.attempts ?? 0;
    if (
      !isUint(r.offset, OFFSET_MAX) ||
      !isUint(attempts, 0xffff_ffff) ||
      !(r.payload instanceof Uint8Array) ||
      (r.skipped_before !== undefined && r.skipped_before !== null && r.skipped_before !== 0) ||
      (r.publisher !== undefined && r.publisher !== null) ||
      (r.timestamp_micros !== undefined && r.timestamp_micros !== null)
    ) {
      return undefined;
    }
    out += `${i === 0 ? '' : ','}{"offset":${r.offset},"payload":"${base64Encode(r.payload)}","attempts":${attempts}}`;
  }
  return `${out}],"request_id":${rid}}`;
}

/**
 * `cache_event` is sent once per change to every watcher, and a retained join sends one per key:
 * written without walking the field table, to the same bytes. An unusual value answers
 * undefined and takes the table path, which also reports bad fields.
 */
function cacheEventJson(message: CacheEventMessage): string | undefined {
  const expires = message.expires_at_millis ?? 0;
  const value: unknown = message.value;
  if (
    typeof message.key !== 'string' ||
    !message.key.isWellFormed() ||
    !isUint(message.offset, OFFSET_MAX) ||
    !isUint(expires, OFFSET_MAX) ||
    (value !== undefined && value !== null && !(value instanceof Uint8Array))
  ) {
    return undefined;
  }
  const v = value === undefined || value === null ? '' : `,"value":"${base64Encode(value)}"`;
  return `{"type":"cache_event","key":${JSON.stringify(message.key)}${v},"offset":${message.offset},"expires_at_millis":${expires}}`;
}

function isUint(value: unknown, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max;
}

function writeFields(spec: FieldSpec[], fields: Fields, where: string, after: boolean): string {
  let out = '';
  let first = !after;
  for (const [name, kind, presence] of spec) {
    const value = fields[name];
    if (value === undefined || value === null) {
      if (presence === 'req') throw new FieldRangeError(`${where}.${name}`, 'is required');
      if (presence === 'null') out += `${first ? '' : ','}"${name}":null`;
      else if (presence === 'default') {
        out += `${first ? '' : ','}"${name}":${kind === 'bool' ? 'false' : '0'}`;
      } else continue;
      first = false;
      continue;
    }
    if (presence === 'skip_false' && value === false) continue;
    if (presence === 'skip_zero' && value === 0) continue;
    out += `${first ? '' : ','}"${name}":${writeValue(kind, value, `${where}.${name}`)}`;
    first = false;
  }
  return out;
}

function writeValue(kind: Kind, value: unknown, what: string): string {
  if (typeof kind === 'object') {
    if ('enum' in kind) {
      if (typeof value !== 'string' || !kind.enum.includes(value)) {
        throw new FieldRangeError(what, `must be one of ${kind.enum.join(', ')}`);
      }
      return JSON.stringify(value);
    }
    if ('obj' in kind) return `{${writeFields(kind.obj, asFields(value, what), what, false)}}`;
    if (!Array.isArray(value)) throw new FieldRangeError(what, 'must be an array');
    return `[${value.map((item, i) => `{${writeFields(kind.list, asFields(item, what), `${what}[${i}]`, false)}}`).join(',')}]`;
  }
  switch (kind) {
    case 'str':
      if (typeof value !== 'string') throw new FieldRangeError(what, 'must be a string');
      // JSON.stringify would write a lone surrogate as an escape that no UTF-8 peer can keep.
      checkWellFormed(value, what);
      return JSON.stringify(value);
    case 'u16':
      return writeUint(value, 0xffff, what);
    case 'u32':
      return writeUint(value, 0xffff_ffff, what);
    case 'u64':
      return writeUint(value, OFFSET_MAX, what);
    case 'u64_big':
      return writeBig(value, 0n, U64_MAX, what);
    case 'i64':
      return writeBig(value, I64_MIN, I64_MAX, what);
    case 'bool':
      if (typeof value !== 'boolean') throw new FieldRangeError(what, 'must be a boolean');
      return value ? 'true' : 'false';
    case 'bytes':
      return `"${base64Encode(asBytes(value, what))}"`;
    case 'bytes_list':
      return `[${asArray(value, what)
        .map((b) => `"${base64Encode(asBytes(b, what))}"`)
        .join(',')}]`;
    case 'u64_list':
      return `[${asArray(value, what)
        .map((n) => writeUint(n, OFFSET_MAX, what))
        .join(',')}]`;
    case 'u16_list':
      return `[${asArray(value, what)
        .map((n) => writeUint(n, 0xffff, what))
        .join(',')}]`;
    case 'u32_list':
      return `[${asArray(value, what)
        .map((n) => writeUint(n, 0xffff_ffff, what))
        .join(',')}]`;
    case 'start':
      return writeStart(value, what);
    case 'refusal':
      return writeRefusal(value, what);
    case 'raw':
      return writeRaw(value, what, 0);
  }
}

function writeUint(value: unknown, max: number, what: string): string {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    throw new FieldRangeError(what, `must be an integer in [0, ${max}]`);
  }
  return String(value);
}

function writeBig(value: unknown, min: bigint, max: bigint, what: string): string {
  const big = typeof value === 'number' && Number.isInteger(value) ? BigInt(value) : value;
  if (typeof big !== 'bigint' || big < min || big > max) {
    throw new FieldRangeError(what, `must be an integer in [${min}, ${max}]`);
  }
  return big.toString();
}

function writeStart(value: unknown, what: string): string {
  if (value === 'latest' || value === 'earliest') return `"${value}"`;
  const offset = (value as { offset?: unknown } | null)?.offset;
  if (typeof value !== 'object' || offset === undefined) {
    throw new FieldRangeError(what, 'must be latest, earliest or {offset}');
  }
  return `{"offset":${writeUint(offset, OFFSET_MAX, what)}}`;
}

function writeRefusal(value: unknown, what: string): string {
  if (value === 'unknown_producer' || value === 'sequence_expired' || value === 'sequence_reused') {
    return `"${value}"`;
  }
  const v = asFields(value, what);
  if (v.sequence_gap !== undefined) {
    const gap = asFields(v.sequence_gap, what);
    return `{"sequence_gap":{"expected":${writeUint(gap.expected, OFFSET_MAX, what)}}}`;
  }
  if (v.offset_mismatch !== undefined) {
    const m = asFields(v.offset_mismatch, what);
    return `{"offset_mismatch":{"tail":${writeUint(m.tail, OFFSET_MAX, what)}}}`;
  }
  if (v.not_leader !== undefined) {
    const spec: FieldSpec[] = [
      ['node_id', 'str', 'req'],
      ['addr', 'str', 'opt'],
      ['generation', 'u64', 'opt'],
    ];
    return `{"not_leader":{${writeFields(spec, asFields(v.not_leader, what), what, false)}}}`;
  }
  throw new FieldRangeError(what, 'is not a known refusal reason');
}

/** Generic JSON for extension bodies; bigints are written as integers. */
function writeRaw(value: unknown, what: string, depth: number): string {
  if (depth > 64) throw new FieldRangeError(what, 'nests too deeply');
  if (value === null) return 'null';
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new FieldRangeError(what, 'must be finite');
    return JSON.stringify(value);
  }
  if (typeof value === 'string') checkWellFormed(value, what);
  if (typeof value === 'string' || typeof value === 'boolean') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => writeRaw(v, what, depth + 1)).join(',')}]`;
  if (typeof value === 'object') {
    const parts = Object.entries(value as Fields)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => {
        checkWellFormed(k, what);
        return `${JSON.stringify(k)}:${writeRaw(v, what, depth + 1)}`;
      });
    return `{${parts.join(',')}}`;
  }
  throw new FieldRangeError(what, 'is not representable as JSON');
}

function asFields(value: unknown, what: string): Fields {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FieldRangeError(what, 'must be an object');
  }
  return value as Fields;
}

function asArray(value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) throw new FieldRangeError(what, 'must be an array');
  return value;
}

function asBytes(value: unknown, what: string): Uint8Array {
  if (!(value instanceof Uint8Array)) throw new FieldRangeError(what, 'must be a Uint8Array');
  return value;
}

// ---- decoding ----

/** Decodes a JSON message payload. Throws only `WireError`. */
export function decodeMessage(payload: Uint8Array): Message {
  const text = decodeUtf8(payload, 'message payload');
  if (text.startsWith(GROUP_RECORDS_PREFIX)) {
    // A poll answer is kilobytes of base64: parsed natively without the scan for long digit
    // runs. Every number it may carry is bounded by 2^53 - 1, so a value the engine rounded
    // is refused by the short path, and then the exact path below decodes it afresh.
    const fast = readGroupRecordsText(text);
    if (fast !== undefined) return fast;
  } else if (text.startsWith(CACHE_EVENT_PREFIX)) {
    const fast = readCacheEventText(text);
    if (fast !== undefined) return fast;
  }
  return decodeText(text);
}

/** Decodes a JSON message payload by its field table only (what the fast paths must equal). */
export function decodeMessageByTable(payload: Uint8Array): Message {
  return decodeText(decodeUtf8(payload, 'message payload'));
}

function decodeText(text: string): Message {
  const parsed = parseJsonFast(text);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidMessageError('message', 'payload', 'is not a JSON object');
  }
  const obj = parsed as JsonObject;
  const type = obj.type;
  if (typeof type !== 'string') {
    throw new InvalidMessageError('message', 'type', 'is missing or not a string');
  }
  if (type === 'group_records') {
    const fast = readGroupRecords(obj);
    if (fast !== undefined) return fast;
  }
  const spec = Object.hasOwn(MESSAGE_SPECS, type) ? MESSAGE_SPECS[type] : undefined;
  if (spec === undefined) return unknownMessage(type, obj);
  const out: Fields = { type };
  readFields(spec, obj, out, type);
  return out as unknown as Message;
}

const GROUP_RECORDS_PREFIX = '{"type":"group_records",';
const CACHE_EVENT_PREFIX = '{"type":"cache_event",';

/**
 * A watcher reads one `cache_event` per change (and per key of a retained join): the common
 * shape is parsed natively and checked field by field, to the same value the table path gives.
 * Anything it does not take answers undefined, and the table path decodes it or reports the
 * typed error. Numbers are bounded by 2^53 - 1, so one the engine rounded is refused here.
 */
function readCacheEventText(text: string): CacheEventMessage | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const obj = parsed as JsonObject;
  // A repeated "type" key: the last one counts, as on the exact path.
  if (obj.type !== 'cache_event') return undefined;
  const key = obj.key;
  const offset = obj.offset;
  const expires = Object.hasOwn(obj, 'expires_at_millis') ? obj.expires_at_millis : null;
  const value = Object.hasOwn(obj, 'value') ? obj.value : null;
  if (
    typeof key !== 'string' ||
    !isUint(offset, OFFSET_MAX) ||
    Object.is(offset, -0) ||
    (expires !== null && (!isUint(expires, OFFSET_MAX) || Object.is(expires, -0))) ||
    (value !== null && typeof value !== 'string')
  ) {
    return undefined;
  }
  const out: CacheEventMessage = {
    type: 'cache_event',
    key,
    offset,
    expires_at_millis: (expires as number | null) ?? 0,
  };
  if (value !== null) {
    const bytes = base64Decode(value as string);
    if (bytes === undefined) return undefined;
    out.value = bytes;
  }
  return out;
}

function readGroupRecordsText(text: string): GroupRecordsMessage | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined; // the exact path reports the typed error
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  // A repeated "type" key: the last one counts, as on the exact path.
  if ((parsed as JsonObject).type !== 'group_records') return undefined;
  return readGroupRecords(parsed as JsonObject);
}

/**
 * The common `group_records` shape read without walking the field table, to the same value the
 * table path gives. Anything it does not take (a bigint, a publisher, a bad payload) answers
 * undefined, and the table path decodes it or reports the typed error.
 */
function readGroupRecords(obj: JsonObject): GroupRecordsMessage | undefined {
  const raw = obj.records;
  const rid = obj.request_id;
  if (!Array.isArray(raw) || !isUint(rid, OFFSET_MAX)) return undefined;
  let total = 0;
  for (let i = 0; i < raw.length; i++) {
    const item = raw[i];
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return undefined;
    const r = item as JsonObject;
    const attempts = Object.hasOwn(r, 'attempts') ? r.attempts : null;
    const skipped = Object.hasOwn(r, 'skipped_before') ? r.skipped_before : null;
    if (
      !Object.hasOwn(r, 'offset') ||
      !isUint(r.offset, OFFSET_MAX) ||
      typeof r.payload !== 'string' ||
      (attempts !== null && !isUint(attempts, 0xffff_ffff)) ||
      (skipped !== null && skipped !== 0) ||
      (Object.hasOwn(r, 'publisher') && r.publisher !== null) ||
      (Object.hasOwn(r, 'timestamp_micros') && r.timestamp_micros !== null)
    ) {
      return undefined;
    }
    const n = base64DecodedLength(r.payload);
    if (n < 0) return undefined;
    total += n;
  }
  // One allocation for every payload of the answer; each record's payload is a view into it.
  const slab = new Uint8Array(total);
  const records: GroupRecord[] = new Array(raw.length);
  let at = 0;
  for (let i = 0; i < raw.length; i++) {
    const r = raw[i] as JsonObject;
    const text = r.payload as string;
    const n = base64DecodedLength(text);
    if (!base64DecodeInto(text, slab, at)) return undefined;
    records[i] = {
      offset: r.offset as number,
      payload: slab.subarray(at, at + n),
      attempts: (r.attempts as number | null | undefined) ?? 0,
      skipped_before: 0,
    };
    at += n;
  }
  return { type: 'group_records', records, request_id: rid };
}

function unknownMessage(type: string, obj: JsonObject): UnknownMessage {
  const out: UnknownMessage = { type: 'unknown', request_type: type, raw: { ...obj } };
  const rid = obj.request_id;
  if (typeof rid === 'number' && Number.isSafeInteger(rid) && rid >= 0) out.request_id = rid;
  return out;
}

function readFields(spec: FieldSpec[], obj: JsonObject, out: Fields, where: string): void {
  for (const [name, kind, presence] of spec) {
    const raw = Object.hasOwn(obj, name) ? obj[name] : undefined;
    if (raw === undefined || raw === null) {
      if (presence === 'req') throw new InvalidMessageError(where, name, 'is missing');
      if (presence === 'skip_false' || (presence === 'default' && kind === 'bool')) {
        out[name] = false;
      } else if (presence === 'skip_zero' || presence === 'default') out[name] = 0;
      continue;
    }
    out[name] = readValue(kind, raw, where, name);
  }
}

function readValue(kind: Kind, raw: JsonValue, where: string, name: string): unknown {
  const bad = (reason: string): never => {
    throw new InvalidMessageError(where, name, reason);
  };
  if (typeof kind === 'object') {
    if ('enum' in kind) {
      if (typeof raw !== 'string' || !kind.enum.includes(raw)) bad('is not a known value');
      return raw;
    }
    if ('obj' in kind) {
      const out: Fields = {};
      readFields(kind.obj, asObject(raw, bad), out, `${where}.${name}`);
      return out;
    }
    if (!Array.isArray(raw)) return bad('is not an array');
    checkListLength(raw, bad);
    return raw.map((item) => {
      const out: Fields = {};
      readFields(kind.list, asObject(item, bad), out, `${where}.${name}`);
      return out;
    });
  }
  switch (kind) {
    case 'str':
      return typeof raw === 'string' ? raw : bad('is not a string');
    case 'u16':
      return readUint(raw, 0xffff, bad);
    case 'u32':
      return readUint(raw, 0xffff_ffff, bad);
    case 'u64':
      return readU64(raw, `${where}.${name}`, bad);
    case 'u64_big':
      return readBig(raw, 0n, U64_MAX, bad);
    case 'i64':
      return readBig(raw, I64_MIN, I64_MAX, bad);
    case 'bool':
      return typeof raw === 'boolean' ? raw : bad('is not a boolean');
    case 'bytes':
      return readBytes(raw, bad);
    case 'bytes_list':
      return listOf(raw, bad).map((b) => readBytes(b, bad));
    case 'u64_list':
      return listOf(raw, bad).map((n) => readU64(n, `${where}.${name}`, bad));
    case 'u16_list':
      return listOf(raw, bad).map((n) => readUint(n, 0xffff, bad));
    case 'u32_list':
      return listOf(raw, bad).map((n) => readUint(n, 0xffff_ffff, bad));
    case 'start':
      return readStart(raw, where, name, bad);
    case 'refusal':
      return readRefusal(raw, where, name, bad);
    case 'raw':
      return raw;
  }
}

/** A list field's items, refused before any is decoded when it holds more than any Felix
 *  message carries: decoding is where a list of tiny items (`""`: 3 bytes of JSON, a Uint8Array
 *  decoded) multiplied its frame's bytes into memory. */
function listOf(raw: JsonValue, bad: (reason: string) => never): JsonValue[] {
  if (!Array.isArray(raw)) return bad('is not an array');
  checkListLength(raw, bad);
  return raw;
}

function checkListLength(raw: readonly JsonValue[], bad: (reason: string) => never): void {
  if (raw.length > JSON_LIST_ITEMS_MAX) {
    bad(`has ${raw.length} items, over ${JSON_LIST_ITEMS_MAX}`);
  }
}

function asObject(raw: JsonValue, bad: (reason: string) => never): JsonObject {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || typeof raw === 'bigint') {
    return bad('is not an object');
  }
  return raw as JsonObject;
}

function readUint(raw: JsonValue, max: number, bad: (reason: string) => never): number {
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0 || raw > max) {
    return bad(`is not an integer in [0, ${max}]`);
  }
  return raw;
}

function readU64(raw: JsonValue, what: string, bad: (reason: string) => never): number {
  if (typeof raw === 'bigint') {
    if (raw > OFFSET_MAX && raw <= U64_MAX) throw new OffsetOutOfRangeError(what, raw);
    return bad('is not a u64');
  }
  return readUint(raw, OFFSET_MAX, bad);
}

function readBig(raw: JsonValue, min: bigint, max: bigint, bad: (r: string) => never): bigint {
  let big: bigint | undefined;
  if (typeof raw === 'bigint') big = raw;
  else if (typeof raw === 'number' && Number.isInteger(raw)) big = BigInt(raw);
  if (big === undefined || big < min || big > max) return bad(`is not an integer in range`);
  return big;
}

function readBytes(raw: JsonValue, bad: (reason: string) => never): Uint8Array {
  if (typeof raw !== 'string') return bad('is not a base64 string');
  return base64Decode(raw) ?? bad('is not valid padded base64');
}

function readStart(raw: JsonValue, where: string, name: string, bad: (r: string) => never) {
  if (raw === 'latest' || raw === 'earliest') return raw;
  const obj = asObject(raw, bad);
  if (obj.offset === undefined) return bad('is not latest, earliest or {offset}');
  return { offset: readU64(obj.offset, `${where}.${name}.offset`, bad) };
}

function readRefusal(raw: JsonValue, where: string, name: string, bad: (r: string) => never) {
  if (raw === 'unknown_producer' || raw === 'sequence_expired' || raw === 'sequence_reused') {
    return raw;
  }
  const obj = asObject(raw, bad);
  const what = `${where}.${name}`;
  if (obj.sequence_gap !== undefined) {
    const gap = asObject(obj.sequence_gap, bad);
    return { sequence_gap: { expected: readU64(gap.expected ?? null, what, bad) } };
  }
  if (obj.offset_mismatch !== undefined) {
    const m = asObject(obj.offset_mismatch, bad);
    return { offset_mismatch: { tail: readU64(m.tail ?? null, what, bad) } };
  }
  if (obj.not_leader !== undefined) {
    const out: Fields = {};
    const spec: FieldSpec[] = [
      ['node_id', 'str', 'req'],
      ['addr', 'str', 'opt'],
      ['generation', 'u64', 'opt'],
    ];
    readFields(spec, asObject(obj.not_leader, bad), out, what);
    return { not_leader: out };
  }
  return bad('is not a known refusal reason');
}
