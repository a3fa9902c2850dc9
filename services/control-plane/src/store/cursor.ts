/**
 * Keyset paging cursors: base64url of a JSON array, the list's tag followed by the last returned
 * key. The tag binds a cursor to the list and scope that issued it, so a cursor handed to another
 * list (or another tenant's or namespace's) is refused rather than read as a position in it.
 */
import { createHash } from 'node:crypto';
import { InvalidCursorError } from '../errors.js';
import { CURSOR_CHARS_MAX } from '../limits.js';

export type CursorKey = (string | number)[];

/** A short digest of what names a list (its query and fixed parameters). */
export function cursorTag(list: string): string {
  return createHash('sha256').update(list).digest('base64url').slice(0, 11);
}

export function encodeCursor(key: CursorKey, tag = ''): string {
  return Buffer.from(JSON.stringify([tag, ...key]), 'utf8').toString('base64url');
}

/** Decodes a cursor issued by the list `tag` names, its key of parts typed as `shape` says. */
export function decodeCursor(cursor: string, shape: readonly ('s' | 'n')[], tag = ''): CursorKey {
  if (cursor.length > CURSOR_CHARS_MAX) throw new InvalidCursorError('cursor is too long');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursorError('cursor is not one this server issued');
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== shape.length + 1 ||
    typeof parsed[0] !== 'string' ||
    parsed
      .slice(1)
      .some((v, i) => (shape[i] === 's' ? typeof v !== 'string' : !Number.isSafeInteger(v)))
  ) {
    throw new InvalidCursorError('cursor is not one this server issued');
  }
  if (parsed[0] !== tag) throw new InvalidCursorError('cursor was issued by another list');
  return parsed.slice(1) as CursorKey;
}
