/**
 * A bounded cache of verified tokens. An Ed25519 check costs tens of microseconds (about 11,000
 * per second per core on the reference machine, by `openssl speed`), so a broker facing a
 * reconnect storm of clients that share a token checks each distinct token once. A hit still
 * re-checks audience, tenant, expiry and that the tenant still has the signing key (so a
 * retired key stops its tokens at once); `clear()` drops everything.
 */
import { TokenExpiredError, TokenUnknownKidError } from './errors.js';
import { TOKEN_CLOCK_SKEW_S, VERIFIED_TOKEN_CACHE_ENTRIES_MAX } from './limits.js';
import { type VerifiedToken, type VerifyTokenOptions, verifyToken } from './token.js';

export class VerifiedTokenCache {
  private readonly entries = new Map<string, VerifiedToken>();

  constructor(private readonly capacity = VERIFIED_TOKEN_CACHE_ENTRIES_MAX) {}

  get size(): number {
    return this.entries.size;
  }

  /** Verifies `token`, or answers from the cache when this exact string verified before. */
  async verify(token: string, opts: VerifyTokenOptions): Promise<VerifiedToken> {
    const hit = this.entries.get(token);
    if (hit && hit.claims.aud === opts.audience && hit.claims.tid === opts.tenant) {
      const now = opts.nowS ?? Math.floor(Date.now() / 1000);
      if (now - TOKEN_CLOCK_SKEW_S >= hit.claims.exp) {
        this.entries.delete(token);
        throw new TokenExpiredError();
      }
      if ((await opts.keys.resolve(opts.tenant, hit.kid)) === null) {
        this.entries.delete(token);
        throw new TokenUnknownKidError(hit.kid);
      }
      return hit;
    }
    const verified = await verifyToken(token, opts);
    if (this.entries.size >= this.capacity) {
      // Oldest first: Map iteration follows insertion order.
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(token, verified);
    return verified;
  }

  /** Forgets every entry. */
  clear(): void {
    this.entries.clear();
  }
}
