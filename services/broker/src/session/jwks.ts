/**
 * Tenant public keys fetched from the control plane: `GET {url}/v1/tenants/{t}/.well-known/
 * jwks.json` (unauthenticated there; the node credential is sent anyway, as on every call).
 * The reference's guards (cluster-control.md §4.2): concurrent misses for a tenant share one
 * request, a failure is remembered for JWKS_FAILURE_MEMORY_MS, at most JWKS_FETCHES_IN_FLIGHT_MAX
 * fetches run at once, each has JWKS_FETCH_TIMEOUT_MS, and a key set is kept JWKS_CACHE_MS (an
 * empty one only JWKS_FAILURE_MEMORY_MS: the tenant may be bootstrapped any moment).
 * A token naming a kid the cached set lacks fetches the set again, at most once per
 * JWKS_UNKNOWN_KID_REFETCH_MS per tenant (the reference never refetches): a tenant deleted and
 * initialized again signs with a new key, which would otherwise be refused for the hour the old
 * set is kept, while the deleted tenant's tokens kept verifying. The new set replaces the old,
 * so a kid that left it (retired, or its tenant deleted) stops verifying then too. A forged kid
 * costs one fetch per tenant per interval at most, and a failed refetch keeps the set it had
 * (the hour of keeping rides out a control-plane outage; a forged kid must not end it).
 */
import { type KeyResolver, importPublicJwk } from '@felix/authz';
import { JwksFetchError } from '../errors.js';
import {
  JWKS_BYTES_MAX,
  JWKS_CACHE_MS,
  JWKS_FAILURE_MEMORY_MS,
  JWKS_FETCHES_IN_FLIGHT_MAX,
  JWKS_FETCH_TIMEOUT_MS,
  JWKS_TENANTS_MAX,
  JWKS_UNKNOWN_KID_REFETCH_MS,
} from '../limits.js';

/** A tenant's public key as the verifier takes it (jose's key type, through authz's resolver). */
export type PublicKey = NonNullable<Awaited<ReturnType<KeyResolver['resolve']>>>;
type JWK = Parameters<typeof importPublicJwk>[0];
export type TenantKeys = ReadonlyMap<string, PublicKey>;

type Entry =
  | { kind: 'keys'; keys: TenantKeys; untilMs: number; fetchedAtMs: number }
  | { kind: 'failed'; error: JwksFetchError; untilMs: number };

/** Parses a JWKS document into kid → key; a key that does not import is skipped, not fatal. */
export async function importJwks(doc: unknown, tenant: string): Promise<Map<string, PublicKey>> {
  const keys = (doc as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new JwksFetchError(tenant, 'no keys array');
  const out = new Map<string, PublicKey>();
  for (const jwk of keys) {
    try {
      const { kid, publicKey } = await importPublicJwk(jwk as JWK);
      out.set(kid, publicKey);
    } catch {
      // A key of another type (or a malformed one) verifies nothing; the others still do.
    }
  }
  return out;
}

export interface JwksOptions {
  baseUrl: string;
  /** The node credential, sent as `Authorization: Bearer` when set. */
  bearer: () => Promise<string | null>;
  /** Injected in tests; the global fetch otherwise. */
  fetch?: typeof fetch;
  now?: () => number;
}

export class JwksKeyResolver implements KeyResolver {
  private readonly entries = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<TenantKeys>>();
  private running = 0;
  private readonly slots: Array<() => void> = [];
  private readonly base: string;
  private readonly fetchFn: typeof fetch;
  private readonly now: () => number;
  /** Fetches started (for tests of the sharing and failure memory). */
  fetches = 0;

  constructor(private readonly opts: JwksOptions) {
    this.base = opts.baseUrl.replace(/\/+$/, '');
    this.fetchFn = opts.fetch ?? fetch;
    this.now = opts.now ?? Date.now;
  }

  async resolve(tenant: string, kid: string): Promise<PublicKey | null> {
    const found = (await this.keysOf(tenant)).get(kid);
    if (found !== undefined) return found;
    // A refetch already out (another token naming a new kid): share its answer.
    const pending = this.inflight.get(tenant);
    // A failed one answers no key for this kid (the set kept verifies the others).
    if (pending !== undefined) return (await pending.catch(() => undefined))?.get(kid) ?? null;
    const entry = this.entries.get(tenant);
    if (entry?.kind !== 'keys' || this.now() - entry.fetchedAtMs < JWKS_UNKNOWN_KID_REFETCH_MS)
      return null;
    return (await this.refetch(tenant, entry)).get(kid) ?? null;
  }

  /**
   * Fetches a tenant's set again for an unknown kid, keeping the set it has until the fetch
   * succeeds: a forged kid while the control plane is down must not cost the tenant the keys it
   * verifies with (they are kept an hour to ride out such an outage). One per interval, whatever
   * its outcome; concurrent ones share the fetch.
   */
  private refetch(tenant: string, kept: Entry & { kind: 'keys' }): Promise<TenantKeys> {
    const pending = this.inflight.get(tenant);
    if (pending !== undefined) return pending.catch(() => kept.keys);
    kept.fetchedAtMs = this.now();
    const started = this.fetchGuarded(tenant, kept).finally(() => this.inflight.delete(tenant));
    this.inflight.set(tenant, started);
    return started;
  }

  /** The tenant's keys: cached, shared with a fetch in flight, or fetched. */
  keysOf(tenant: string): Promise<TenantKeys> {
    const entry = this.entries.get(tenant);
    const now = this.now();
    if (entry !== undefined && entry.untilMs > now) {
      return entry.kind === 'keys' ? Promise.resolve(entry.keys) : Promise.reject(entry.error);
    }
    const pending = this.inflight.get(tenant);
    if (pending !== undefined) return pending;
    if (this.inflight.size >= JWKS_TENANTS_MAX) {
      return Promise.reject(new JwksFetchError(tenant, 'too many key sets being fetched'));
    }
    const started = this.fetchGuarded(tenant).finally(() => this.inflight.delete(tenant));
    this.inflight.set(tenant, started);
    return started;
  }

  /** Fetches the tenant's set; `kept` (a refetch's) stays, and is answered, if the fetch fails. */
  private async fetchGuarded(tenant: string, kept?: Entry & { kind: 'keys' }): Promise<TenantKeys> {
    await this.slot();
    try {
      const keys = await this.fetchOnce(tenant);
      // No keys (a tenant not bootstrapped yet, or unknown) is kept only as long as a failure:
      // any client may name a tenant in `auth`, and an hour of "no keys" would lock it out here.
      const keepMs = keys.size === 0 ? JWKS_FAILURE_MEMORY_MS : JWKS_CACHE_MS;
      const now = this.now();
      this.remember(tenant, { kind: 'keys', keys, untilMs: now + keepMs, fetchedAtMs: now });
      return keys;
    } catch (err) {
      if (kept !== undefined) {
        this.remember(tenant, kept);
        return kept.keys;
      }
      const error =
        err instanceof JwksFetchError
          ? err
          : new JwksFetchError(tenant, (err as Error).message, { cause: err });
      this.remember(tenant, {
        kind: 'failed',
        error,
        untilMs: this.now() + JWKS_FAILURE_MEMORY_MS,
      });
      throw error;
    } finally {
      this.release();
    }
  }

  private async fetchOnce(tenant: string): Promise<TenantKeys> {
    this.fetches++;
    const url = `${this.base}/v1/tenants/${encodeURIComponent(tenant)}/.well-known/jwks.json`;
    const token = await this.opts.bearer();
    const res = await this.fetchFn(url, {
      headers: token === null ? {} : { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(JWKS_FETCH_TIMEOUT_MS),
      redirect: 'error',
    });
    if (res.status === 404) return new Map(); // an unknown tenant has no keys: its tokens fail
    if (!res.ok) throw new JwksFetchError(tenant, `HTTP ${res.status}`);
    const text = await res.text();
    if (text.length > JWKS_BYTES_MAX) {
      throw new JwksFetchError(tenant, `answer over ${JWKS_BYTES_MAX} bytes`);
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw new JwksFetchError(tenant, 'not JSON', { cause: err });
    }
    return importJwks(doc, tenant);
  }

  private remember(tenant: string, entry: Entry): void {
    this.entries.delete(tenant);
    if (this.entries.size >= JWKS_TENANTS_MAX) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(tenant, entry);
  }

  private async slot(): Promise<void> {
    if (this.running < JWKS_FETCHES_IN_FLIGHT_MAX) {
      this.running++;
      return;
    }
    // Waiters are bounded by the tenants in flight (one shared fetch per tenant).
    await new Promise<void>((resolve) => this.slots.push(resolve));
  }

  private release(): void {
    const next = this.slots.shift();
    if (next !== undefined)
      next(); // the slot passes straight to the next waiter
    else this.running--;
  }
}
