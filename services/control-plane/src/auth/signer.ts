/**
 * Signs Felix tokens with a tenant's active key: the token routes (exchange, refresh,
 * delegation) and the bootstrap dev-token use this one module. The imported private key is
 * cached by kid (bounded); the active kid is read from the store on every signature, so an
 * activation on any instance takes effect on the next token.
 */
import {
  type Audience,
  type SigningKey,
  TOKEN_LIFETIME_S_MAX,
  importPrivateJwk,
  signToken,
} from '@felix/authz';
import type { Clock } from '../clock.js';
import { InvalidRequestError, NoActiveKeyError } from '../errors.js';
import { ACCESS_TOKEN_TTL_S_DEFAULT, SIGNING_KEYS_CACHE_ENTRIES_MAX } from '../limits.js';
import type { ControlStore } from '../store/store.js';

export interface MintInput {
  tenant: string;
  subject: string;
  audience: Audience;
  permissions: readonly string[];
  /** Seconds; ACCESS_TOKEN_TTL_S_DEFAULT (900) when omitted, at most a day. */
  lifetimeS?: number;
  /** Who mints the token in `subject`'s name (its `act` claim), for a delegation to another. */
  actor?: string;
}

export interface MintedToken {
  token: string;
  kid: string;
  expires_in: number;
}

export class TokenSigner {
  private readonly keys = new Map<string, Promise<SigningKey>>();

  constructor(
    private readonly store: ControlStore,
    private readonly clock: Clock,
    private readonly capacity = SIGNING_KEYS_CACHE_ENTRIES_MAX,
  ) {}

  /** Signs a token for `input.tenant` with its active key; NoActiveKeyError when it has none. */
  async mint(input: MintInput): Promise<MintedToken> {
    const lifetimeS = input.lifetimeS ?? ACCESS_TOKEN_TTL_S_DEFAULT;
    if (!Number.isInteger(lifetimeS) || lifetimeS < 1 || lifetimeS > TOKEN_LIFETIME_S_MAX)
      throw new InvalidRequestError(
        `lifetime ${lifetimeS} s is outside 1..${TOKEN_LIFETIME_S_MAX}`,
      );
    const key = await this.activeKey(input.tenant);
    const token = await signToken(
      {
        audience: input.audience,
        subject: input.subject,
        tenant: input.tenant,
        permissions: input.permissions,
        lifetimeS,
        ...(input.actor === undefined ? {} : { actor: input.actor }),
        nowS: Math.floor(this.clock.nowMs() / 1000),
      },
      key,
    );
    return { token, kid: key.kid, expires_in: lifetimeS };
  }

  private async activeKey(tenant: string): Promise<SigningKey> {
    const stored = await this.store.signingKeys.active(tenant);
    if (!stored) throw new NoActiveKeyError(`tenant ${tenant} has no active signing key`);
    const cacheKey = `${tenant}\u0000${stored.kid}`;
    let key = this.keys.get(cacheKey);
    if (!key) {
      if (this.keys.size >= this.capacity) {
        const oldest = this.keys.keys().next();
        if (!oldest.done) this.keys.delete(oldest.value);
      }
      key = importPrivateJwk(stored.private_jwk);
      this.keys.set(cacheKey, key);
      key.catch(() => this.keys.delete(cacheKey));
    }
    return key;
  }
}
