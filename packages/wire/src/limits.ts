/**
 * Bounds of the wire codec. Every length or count read from untrusted bytes is checked
 * against one of these (and against the bytes actually remaining) before anything is
 * allocated.
 */

/** FLX1 and FLXI headers: magic u32, version u16, flags/kind u16, length u32. */
export const FRAME_HEADER_BYTES = 12;

/** Largest payload the 32-bit length field can express; encoders never exceed it. */
export const FRAME_PAYLOAD_BYTES_LIMIT = 0xffff_ffff;

/**
 * Default cap on one client frame's payload, used by `FrameDecoder` unless told otherwise.
 * The reference documents a 16 MB practical limit; it also bounds the decoder's buffer.
 */
export const FRAME_PAYLOAD_BYTES_MAX_DEFAULT = 16 * 1024 * 1024;

/** Cap on a frame read before its stream authenticated (reference default 64 KiB). */
export const PREAUTH_FRAME_PAYLOAD_BYTES_MAX = 64 * 1024;

/** Cap on one broker-internal frame body (`MAX_BODY_BYTES` in the reference). */
export const INTERNAL_BODY_BYTES_MAX = 64 * 1024 * 1024;

/** Most payloads one internal payload list may carry (`MAX_BATCH_PAYLOADS`). */
export const INTERNAL_BATCH_PAYLOADS_MAX = 65_536;

/** Longest identifier string in an internal body (`MAX_IDENT_BYTES`): names, node ids. */
export const INTERNAL_IDENT_BYTES_MAX = 512;
/** Bytes an internal body writer starts with when not told more: a reply, a fence or a hello
 *  fits. It grows (doubling) to the body, bounded by INTERNAL_BODY_BYTES_MAX at the header. */
export const INTERNAL_BODY_START_BYTES = 256;
/** What an internal body holds besides its payloads or value, guessed when sizing its writer:
 *  a shard ref of short names, offsets, a checksum, counts. A longer body grows once. */
export const INTERNAL_BODY_FIELDS_BYTES_GUESS = 160;

/**
 * Longest credential (a client bearer token) riding an authorized forward. Tokens are JWTs
 * of a few KiB at most; 64 KiB matches the pre-auth frame cap a client token arrived under.
 */
export const INTERNAL_CREDENTIAL_BYTES_MAX = 64 * 1024;

/** Longest publisher principal on an event batch: its length is a u8. */
export const PUBLISHER_BYTES_MAX = 255;

/** Longest u16-prefixed string in a binary client layout (tenant, key, node id). */
export const BINARY_STRING_BYTES_MAX = 0xffff;

/**
 * Deepest JSON nesting the message parser accepts. Felix messages nest three levels at most
 * (a list of objects holding an object); 64 leaves room for extension bodies while keeping
 * the recursive parser's stack use bounded.
 */
export const JSON_DEPTH_MAX = 64;

/** Largest offset (and any u64 position) representable exactly as a JavaScript number. */
export const OFFSET_MAX = Number.MAX_SAFE_INTEGER;

/** Records one binary `group_records` frame (flag 0x8000) may declare; a broker sends at most
 *  its poll cap (1,000 by default). The decoder also checks the count against the bytes left. */
export const GROUP_RECORDS_BINARY_MAX = 65_536;

/** From this size an encoder's buffer is not zeroed first (every byte is written before
 *  `finish()` returns it, which asserts so): zeroing a 512 KiB publish batch cost about as much
 *  as filling it. */
export const WRITER_UNZEROED_BYTES_MIN = 64 * 1024;

/** Bytes of a get request's scope (tenant, namespace and cache with the JSON between them) a
 *  `GetRequestReader` keeps to reuse their decoded strings on the next get: three identifiers of
 *  the broker's 255-byte bound and the field names between them; a longer scope is decoded per
 *  request. */
export const GET_SCOPE_MEMO_BYTES_MAX = 3 * 255 + 32;
/** Bytes of a binary cache request's scope (three u16-prefixed identifiers of the broker's
 *  255-byte bound) a `CacheFrameReader` keeps to reuse their strings on the next request. */
export const CACHE_SCOPE_MEMO_BYTES_MAX = 3 * (2 + 255);
/** Bytes of a binary group request's scope (four u16-prefixed identifiers of the broker's
 *  255-byte bound and a u32 shard) a `GroupFrameReader` keeps to reuse on the next request. */
export const GROUP_SCOPE_MEMO_BYTES_MAX = 4 * (2 + 255) + 4;
/** Offsets one binary group ack or its answer can name: its u16 count (the broker bounds a
 *  batch lower, as it does the JSON form's). */
export const BINARY_GROUP_OFFSETS_MAX = 0xffff;
/** Short strings of binary frames (tenant, namespace, stream) decoded recently, kept with their
 *  bytes so the next frame naming them skips the UTF-8 decoder: a stream's frames repeat them.
 *  Slots, and the longest string kept (an identifier of the broker's 255-byte bound). */
export const UTF8_MEMO_SLOTS = 8;
export const UTF8_MEMO_BYTES_MAX = 255;
/** The same for encoding: strings a binary frame was encoded with recently, and their bytes. */
export const UTF8_ENCODE_MEMO_SLOTS = 8;
/** A decoder asked to compact (`compactHeldPieces`) copies a piece of a partial frame it keeps
 *  across chunks when the memory behind the piece is more than this many times its bytes: a
 *  byte of a frame then never pins a whole read buffer, so what the bytes held count is what
 *  they cost, within this factor. */
export const HELD_PIECE_BACKING_RATIO_MAX = 2;

/**
 * Records one publish batch may carry, JSON or binary (the broker refuses more, the client
 * splits nothing and refuses too). Without it a 16 MiB frame of empty records made a broker
 * build 4-5 million records from one read.
 */
export const PUBLISH_BATCH_RECORDS_MAX = 65_536;

/** Items any list of a JSON message may hold: the decoder refuses a longer one before decoding
 *  its items (a publish batch is the longest list any Felix message carries). */
export const JSON_LIST_ITEMS_MAX = PUBLISH_BATCH_RECORDS_MAX;
