/** What a QUIC library error says, in words: @matrixai/quic's errors carry an empty message
 *  and keep it in their `description` ("QUIC Client create timeout"). */
export function quicErrorText(err: unknown): string {
  const e = err as { message?: unknown; description?: unknown; name?: unknown } | null;
  for (const text of [e?.message, e?.description, e?.name]) {
    if (typeof text === 'string' && text !== '') return text;
  }
  return String(err);
}
