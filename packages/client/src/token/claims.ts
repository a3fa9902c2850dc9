/**
 * Reads the times of a JWT (`iat`, `exp`) to schedule its refresh. Nothing is verified: the
 * broker verifies; the client only needs to know when to ask for the next token. The token is
 * untrusted input (a provider may return anything), so its size is bounded before any decoding
 * and every failure is an InvalidTokenError.
 */
import { InvalidTokenError } from '../errors.js';
import { TOKEN_BYTES_MAX } from '../limits.js';

export interface TokenTimes {
  /** `iat` in unix milliseconds, when the token has one. */
  issuedAtMs: number | undefined;
  /** `exp` in unix milliseconds, when the token has one. */
  expiresAtMs: number | undefined;
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The payload (middle part) of a compact JWT as bytes; throws InvalidTokenError. */
function payloadBytes(token: string): Uint8Array {
  if (token.length > TOKEN_BYTES_MAX)
    throw new InvalidTokenError(`longer than ${TOKEN_BYTES_MAX} characters`);
  const parts = token.split('.', 4);
  if (parts.length !== 3) throw new InvalidTokenError('not three dot-separated parts');
  const middle = parts[1]!;
  // Base64url without padding never leaves one character over in its last group.
  if (middle.length === 0 || middle.length % 4 === 1 || !BASE64URL.test(middle))
    throw new InvalidTokenError('the payload is not base64url');
  return Buffer.from(middle, 'base64url');
}

/** A NumericDate claim (seconds since the epoch) in milliseconds; undefined when absent. */
function seconds(claims: Record<string, unknown>, name: 'iat' | 'exp'): number | undefined {
  const v = claims[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 1e13)
    throw new InvalidTokenError(`\`${name}\` is not a date in seconds`);
  return Math.round(v * 1000);
}

/** `iat` and `exp` of a compact JWT, unverified. Throws InvalidTokenError on anything else. */
export function tokenTimes(token: string): TokenTimes {
  const bytes = payloadBytes(token);
  let claims: unknown;
  try {
    claims = JSON.parse(UTF8.decode(bytes));
  } catch {
    throw new InvalidTokenError('the payload is not JSON');
  }
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims))
    throw new InvalidTokenError('the payload is not a JSON object');
  const c = claims as Record<string, unknown>;
  return { issuedAtMs: seconds(c, 'iat'), expiresAtMs: seconds(c, 'exp') };
}
