// Found by a review: d3ccd6ca's refetch sets fetchedAtMs before its fetch, so a second token naming the
// same new kid while that refetch is out is answered null (refused) at once, not given the
// refetch's answer ("concurrent ones share the fetch"); before, it shared the fetch.
import { exportPublicJwk, generateSigningKey } from '@felix/authz';
import { describe, expect, it } from 'vitest';
import { JWKS_UNKNOWN_KID_REFETCH_MS } from '../src/limits.js';
import { JwksKeyResolver } from '../src/session/jwks.js';

describe('jwks refetch for a new kid', () => {
  it('two_tokens_of_a_rotated_key_arriving_together_both_verify', async () => {
    const old = await generateSigningKey();
    const rotated = await generateSigningKey();
    let body = JSON.stringify({ keys: [await exportPublicJwk(old.publicKey, old.kid)] });
    let now = 1_000_000;
    const fetchFn = (async () => {
      await new Promise((r) => setTimeout(r, 50)); // the control plane's round trip
      return new Response(body, { status: 200 });
    }) as unknown as typeof fetch;
    const r = new JwksKeyResolver({
      baseUrl: 'http://cp',
      bearer: async () => null,
      fetch: fetchFn,
      now: () => now,
    });
    expect(await r.resolve('t1', old.kid)).not.toBeNull();
    // The tenant signs with a new key now (re-initialized); its clients reconnect together.
    body = JSON.stringify({ keys: [await exportPublicJwk(rotated.publicKey, rotated.kid)] });
    now += JWKS_UNKNOWN_KID_REFETCH_MS + 1;
    const [x, y] = await Promise.all([r.resolve('t1', rotated.kid), r.resolve('t1', rotated.kid)]);
    expect([x !== null, y !== null]).toEqual([true, true]);
  });
});
