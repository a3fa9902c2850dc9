/**
 * Group requests and answers that repeat one shape: a group's polls differ only in their request
 * id, its ack batches in their offsets and id, and most ack answers in their id. The wire
 * encoder makes the JSON text once with placeholder values (so it stays byte-identical to what
 * it would write) and each request splices its own values in; the common ack answer is read by
 * matching its text. A consumer taking one record at a time pays this per job, twice.
 */
import {
  FRAME_HEADER_BYTES,
  type Message,
  encodeFrame,
  groupScopeBytes,
  messageJson,
  writeFrameHeader,
} from '@felix/wire';
import { ProtocolError } from '../errors.js';

const UTF8 = new TextEncoder();

/**
 * The JSON text of one message shape with holes where the named fields' values go. `shape` holds
 * a placeholder at each named field (any JSON value); the fields must each appear once.
 */
export class FrameTemplate {
  /** Text between the holes: one more than the fields. */
  private readonly parts: string[];

  constructor(shape: Message, fields: readonly string[]) {
    const text = messageJson(shape);
    const holes = fields.map((name) => {
      const mark = `"${name}":`;
      const at = text.indexOf(mark);
      // A quote inside a string value is escaped, so a key's mark appears only as that key.
      if (at < 0 || text.indexOf(mark, at + 1) >= 0) {
        throw new ProtocolError(`no single ${name} in a ${shape.type} template`);
      }
      const start = at + mark.length;
      const value = JSON.stringify((shape as unknown as Record<string, unknown>)[name]);
      if (text.slice(start, start + value.length) !== value) {
        throw new ProtocolError(`${name} of a ${shape.type} template is not where it was written`);
      }
      return { start, end: start + value.length };
    });
    for (let i = 1; i < holes.length; i++) {
      if (holes[i]!.start < holes[i - 1]!.end) {
        throw new ProtocolError(`a ${shape.type} template's fields are named out of order`);
      }
    }
    this.parts = [];
    let from = 0;
    for (const h of holes) {
      this.parts.push(text.slice(from, h.start));
      from = h.end;
    }
    this.parts.push(text.slice(from));
  }

  /** A frame (flags 0) of the shape with `values` (JSON text, in field order) in its holes. */
  frame(values: readonly (string | number)[]): Uint8Array {
    const parts = this.parts;
    let text = parts[0]!;
    for (let i = 0; i < values.length; i++) text += values[i]! + parts[i + 1]!;
    const frame = new Uint8Array(FRAME_HEADER_BYTES + text.length);
    // ASCII text (the usual names and numbers) is its own UTF-8: written straight into the frame.
    if (UTF8.encodeInto(text, frame.subarray(FRAME_HEADER_BYTES)).read === text.length) {
      writeFrameHeader(frame, 0, 0, text.length);
      return frame;
    }
    return encodeFrame(0, UTF8.encode(text));
  }
}

/** `group_acked` answers naming no stale offset, read by their text (else the general decoder). */
const ACKED_HEAD = '{"type":"group_acked","stale":[],"request_id":';

/**
 * The answer `{ type: 'group_acked', stale: [], request_id }` when `payload` is exactly its
 * JSON; undefined for anything else (stale offsets, an error), which the general decoder reads.
 */
export function quickAcked(payload: Uint8Array): Message | undefined {
  const n = ACKED_HEAD.length;
  // The shortest such answer has one digit and the closing brace.
  if (payload.length < n + 2 || payload[payload.length - 1] !== 0x7d) return undefined;
  for (let i = 0; i < n; i++) if (payload[i] !== ACKED_HEAD.charCodeAt(i)) return undefined;
  let id = 0;
  for (let i = n; i < payload.length - 1; i++) {
    const d = payload[i]! - 0x30;
    if (d < 0 || d > 9) return undefined;
    id = id * 10 + d;
  }
  if (!Number.isSafeInteger(id)) return undefined;
  return { type: 'group_acked', stale: [], request_id: id };
}

/** Whether the wire encoder writes a plain `group_acked` as quickAcked expects (checked once). */
export const QUICK_ACKED_MATCHES =
  messageJson({ type: 'group_acked', stale: [], request_id: 7 } as Message) === `${ACKED_HEAD}7}`;

/** A group's scope as a request carries it (tenant, namespace, stream, shard, group) in the
 *  binary exchange's layout (flag word 0x8002), encoded once per group and connection. */
export function groupScopeOf(where: Record<string, string | number>): Uint8Array {
  return groupScopeBytes(
    String(where.tenant_id),
    String(where.namespace),
    String(where.stream),
    Number(where.shard),
    String(where.group),
  );
}
