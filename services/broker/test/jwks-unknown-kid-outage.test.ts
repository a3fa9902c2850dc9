// Goal: a token naming an unknown kid (anyone can forge one: the kid is read before the
// signature is checked) must not cost a tenant the key set the broker holds. The broker keeps a
// tenant's keys JWKS_CACHE_MS (an hour) so its clients ride out a control-plane outage; the
// unknown-kid refetch (073b07a4) drops the cached set before it refetches, and a refetch that
// fails leaves only the failure, so every valid token of the tenant is refused.
// Method: the JWKS resolver with an injected fetch and clock; the control plane answers once,
// then is unreachable (503); a forged kid arrives after the refetch interval.
import { exportPublicJwk, generateSigningKey } from '@felix/authz';
import { describe, expect, it } from 'vitest';
import { JwksKeyResolver } from '../src/session/jwks.js';
import { JWKS_UNKNOWN_KID_REFETCH_MS } from '../src/limits.js';

describe('jwks unknown kid during a control-plane outage', () => {
  it('a_forged_kid_during_a_control_plane_outage_keeps_the_tenants_cached_keys_verifying', async () => {
    const k = await generateSigningKey();
    const body = JSON.stringify({ keys: [await exportPublicJwk(k.publicKey, k.kid)] });
    let now = 1_000_000;
    let up = true;
    const fetchFn = (async () =>
      up
        ? new Response(body, { status: 200 })
        : new Response('down', { status: 503 })) as unknown as typeof fetch;
    const r = new JwksKeyResolver({
      baseUrl: 'http://cp',
      bearer: async () => null,
      fetch: fetchFn,
      now: () => now,
    });
    expect(await r.resolve('t1', k.kid)).not.toBeNull();
    // The control plane goes away; the cached set is well within its hour.
    up = false;
    now += JWKS_UNKNOWN_KID_REFETCH_MS + 1;
    // Someone presents a token with a made-up kid: refused, whatever the refetch did.
    await r.resolve('t1', 'forged').catch(() => null);
    // The tenant's real key must still verify, as it did before the forged token.
    await expect(r.resolve('t1', k.kid)).resolves.not.toBeNull();
  });
});
