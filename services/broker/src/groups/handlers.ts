/**
 * Registers the consumer-group requests on the edge's HandlerTable, with the feature bits they
 * offer and their answer encoding: a poll's answer goes as a binary `group_records` frame to a
 * client that offered it. Without durable storage groups are not served: each request is
 * refused (`groups_not_durable`) and no group feature is offered.
 */
import {
  FEATURE_CONSUMER_GROUP,
  FEATURE_GROUP_ADMIN,
  FEATURE_GROUP_CLAIM_CONTROL,
  FEATURE_GROUP_CONSUMER,
  FEATURE_GROUP_DEAD_LETTERS,
  FEATURE_GROUP_SKIPPED,
  FEATURE_HI_GROUP_ACK_BATCH,
  FEATURE_HI_GROUP_BINARY,
  FEATURE_HI_GROUP_DEAD_LETTER_PAGES,
  FEATURE_HI_GROUP_NACK_BATCH,
  FEATURE_HI_GROUP_RELEASE,
  FEATURE_HI_GROUP_RECORDS_BINARY,
  FLAG_BINARY_GROUP_RECORDS,
  FRAME_HEADER_BYTES,
  type Message,
  encodeGroupAcked,
  encodeGroupRecordsFrame,
  encodeMessage,
  fitsBinaryGroupAcked,
  fitsBinaryGroupRecords,
  messageJson,
  writeFrameHeader,
} from '@felix/wire';
import type { ProjectionAnswers } from '../caches/answers.js';
import type { Handler, HandlerTable, RequestContext } from '../session/handler.js';
import type { Negotiated } from '../session/negotiation.js';
import { Refusal } from '../session/refusal.js';
import type { GroupService } from './group-service.js';

export const GROUP_FEATURES =
  FEATURE_CONSUMER_GROUP |
  FEATURE_GROUP_DEAD_LETTERS |
  FEATURE_GROUP_ADMIN |
  FEATURE_GROUP_CLAIM_CONTROL |
  FEATURE_GROUP_CONSUMER |
  FEATURE_GROUP_SKIPPED;

/** High-word bits, Felix extensions: `group_ack_batch` and `group_nack_batch` (plain
 *  `group_ack` and `group_nack` stay), binary `group_records` answers (the JSON answer stays),
 *  the binary poll and ack requests (session/client-session.ts reads them; JSON stays served),
 *  `release` on `group_nack_batch` and dead-letter pages (`after`/`limit`/`more`). */
export const GROUP_FEATURES_HI =
  FEATURE_HI_GROUP_ACK_BATCH |
  FEATURE_HI_GROUP_DEAD_LETTER_PAGES |
  FEATURE_HI_GROUP_NACK_BATCH |
  FEATURE_HI_GROUP_RECORDS_BINARY |
  FEATURE_HI_GROUP_BINARY |
  FEATURE_HI_GROUP_RELEASE;

const GROUP_REQUESTS = [
  'group_poll',
  'group_ack',
  'group_ack_batch',
  'group_nack',
  'group_nack_batch',
  'group_extend',
  'group_dead_letter',
  'group_dead_letters',
  'group_discard',
  'group_redrive',
  'group_seek',
  'group_describe',
  'group_delete',
] as const;

type GroupRequest = Extract<Message, { type: (typeof GROUP_REQUESTS)[number] }>;

/**
 * A poll's answer as a binary `group_records` frame (flag 0x8000) when the client offered both
 * the flag and FEATURE_HI_GROUP_RECORDS_BINARY and the answer fits the layout, an ack batch's
 * as a binary `group_acked` (flag word 0x8002) when it negotiated FEATURE_HI_GROUP_BINARY;
 * otherwise JSON. Never a flag-bearing frame the client did not offer.
 */
export function groupAnswerFrame(auth: Negotiated, m: Message): Uint8Array {
  if (m.type === 'group_acked') {
    // Binary to a client that negotiated the group exchange, whichever form its ack came in.
    if ((auth.featuresHi & FEATURE_HI_GROUP_BINARY) !== 0 && fitsBinaryGroupAcked(m)) {
      return encodeGroupAcked(m.request_id, m.stale);
    }
    if (m.stale.length === 0) return ackedFrame(m.request_id);
  }
  if (
    m.type === 'group_records' &&
    (auth.flags & FLAG_BINARY_GROUP_RECORDS) !== 0 &&
    (auth.featuresHi & FEATURE_HI_GROUP_RECORDS_BINARY) !== 0 &&
    fitsBinaryGroupRecords(m)
  ) {
    return encodeGroupRecordsFrame(m);
  }
  return encodeMessage(m);
}

const ASCII = new TextEncoder();

/** The JSON text of a `group_acked` naming no stale offset, around its request id (made once). */
const ACKED = (() => {
  const text = messageJson({ type: 'group_acked', stale: [], request_id: 0 });
  const at = text.lastIndexOf('0');
  return { head: text.slice(0, at), tail: text.slice(at + 1) };
})();

/**
 * The answer to an ack batch that finished everything it named, the one a consumer acking each
 * job waits for: its text is spliced, not encoded field by field (byte-identical either way).
 */
function ackedFrame(requestId: number): Uint8Array {
  const text = `${ACKED.head}${requestId}${ACKED.tail}`;
  const frame = new Uint8Array(FRAME_HEADER_BYTES + text.length);
  ASCII.encodeInto(text, frame.subarray(FRAME_HEADER_BYTES)); // digits and names: all ASCII
  writeFrameHeader(frame, 0, 0, text.length);
  return frame;
}

export function registerGroupHandlers(
  table: HandlerTable,
  groups: GroupService | null,
  answers: ProjectionAnswers,
): void {
  const answer =
    groups === null
      ? () =>
          Promise.reject(
            new Refusal(
              'invalid_request',
              'consumer groups need durable storage (durable.data_dir)',
              'groups_not_durable',
            ),
          )
      : (msg: GroupRequest, rc: RequestContext) => groups.answer(rc.auth, msg, rc.conn, rc);
  const handler: Handler<GroupRequest> = {
    onPublishOnly: 'unsupported',
    shardLocation: 'message',
    handle: (msg, rc) => answers.queue(rc, msg, answer, groupAnswerFrame),
  };
  for (const type of GROUP_REQUESTS) table.register(type, handler);
  if (groups !== null) table.offer(GROUP_FEATURES, GROUP_FEATURES_HI);
}
