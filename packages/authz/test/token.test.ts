// Goal: a Felix token verifies only for its audience, its tenant, its tenant's key, within its
// lifetime (plus the bounded skew), and each refusal is its own typed error. Method: tokens
// signed with jose through signToken, and hand-made bad tokens (jose's SignJWT directly,
// tampered bytes, garbage), verified against an in-memory key set.
import { SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  BROKER_AUDIENCE,
  CONTROL_PLANE_AUDIENCE,
  FELIX_ISSUER,
  InMemoryKeySet,
  type SigningKey,
  type SigningKeyPair,
  TOKEN_CLOCK_SKEW_S,
  TokenClaimsError,
  TokenError,
  TokenWrongTenantError,
  type TokenFailure,
  VerifiedTokenCache,
  type VerifyTokenOptions,
  exportPrivateJwk,
  exportPublicJwk,
  generateSigningKey,
  importPrivateJwk,
  signToken,
  verifyToken,
} from '../src/index.js';

const NOW = 1_900_000_000;
let t1: SigningKeyPair;
let t2: SigningKeyPair;
let stray: SigningKeyPair;
const keys = new InMemoryKeySet();
const forT1: VerifyTokenOptions = { audience: BROKER_AUDIENCE, tenant: 't1', keys, nowS: NOW };

beforeAll(async () => {
  [t1, t2, stray] = await Promise.all([
    generateSigningKey(),
    generateSigningKey(),
    generateSigningKey(),
  ]);
  keys.add('t1', t1.kid, t1.publicKey);
  keys.add('t2', t2.kid, t2.publicKey);
});

const mint = (over: Partial<Parameters<typeof signToken>[0]> = {}, key: SigningKey = t1) =>
  signToken(
    {
      audience: BROKER_AUDIENCE,
      subject: 'alice',
      tenant: 't1',
      permissions: ['stream.publish:stream:t1/ns/*'],
      lifetimeS: 900,
      nowS: NOW,
      ...over,
    },
    key,
  );

/** A token made with jose directly, for shapes signToken refuses to make. */
function raw(claims: Record<string, unknown>, header: Record<string, unknown> = {}) {
  const jwt = new SignJWT({ tid: 't1', perms: [], ...claims })
    .setProtectedHeader({ alg: 'EdDSA', kid: t1.kid, ...header })
    .setIssuedAt(NOW)
    .setExpirationTime(NOW + 900)
    .setSubject('alice');
  if (claims.iss === undefined) jwt.setIssuer(FELIX_ISSUER);
  if (claims.aud === undefined) jwt.setAudience(BROKER_AUDIENCE);
  return jwt;
}

async function failure(token: string | Promise<string>, opts = forT1): Promise<TokenFailure> {
  try {
    await verifyToken(await token, opts);
  } catch (err) {
    if (err instanceof TokenError) return err.reason;
    throw err;
  }
  throw new Error('the token verified');
}

describe('felix tokens', () => {
  it('a_signed_token_verifies_with_its_claims_and_compiled_permissions', async () => {
    const v = await verifyToken(await mint(), forT1);
    expect(v.kid).toBe(t1.kid);
    expect(v.claims).toMatchObject({
      iss: 'felix-auth',
      aud: 'felix-broker',
      sub: 'alice',
      tid: 't1',
    });
    expect(v.claims.exp - v.claims.iat).toBe(900);
    expect(v.permissions.allows('stream.publish', 'stream', 't1', 'ns', 'orders')).toBe(true);
    expect(v.permissions.allows('stream.subscribe', 'stream', 't1', 'ns', 'orders')).toBe(false);
  });

  it('a_token_signed_by_another_tenants_key_fails_verification', async () => {
    // t2's key under a kid t1 does not have: unknown kid. Under t1's own kid: bad signature.
    expect(await failure(mint({}, t2))).toBe('unknown_kid');
    expect(await failure(mint({}, { kid: t1.kid, privateKey: t2.privateKey }))).toBe(
      'bad_signature',
    );
    // And a token t2 signed for itself does not open t1.
    expect(await failure(mint({ tenant: 't2', permissions: [] }, t2))).toBe('wrong_tenant');
  });

  it('a_token_of_another_tenant_is_refused_naming_both_tenants_before_any_key_lookup', async () => {
    const token = await mint({ tenant: 't2', permissions: [] }, t2);
    const looked: string[] = [];
    const counting = {
      resolve: (tenant: string, kid: string) => {
        looked.push(`${tenant}/${kid}`);
        return keys.resolve(tenant, kid);
      },
    };
    const err = await verifyToken(token, { ...forT1, keys: counting }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenWrongTenantError);
    expect((err as Error).message).toBe('the token is for tenant "t2", not for tenant t1');
    expect(looked).toEqual([]);
    // Its own tenant still verifies it.
    const v = await verifyToken(token, { ...forT1, tenant: 't2', keys: counting });
    expect(v.claims.tid).toBe('t2');
    expect(looked).toEqual([`t2/${t2.kid}`]);
  });

  it('an_expired_token_fails_verification_with_its_reason', async () => {
    const token = await mint({ nowS: NOW - 900 - TOKEN_CLOCK_SKEW_S - 1 });
    expect(await failure(token)).toBe('expired');
    // Inside the skew bound it still verifies; one second past it, it does not.
    const edge = await mint({ nowS: NOW - 900 - TOKEN_CLOCK_SKEW_S + 1 });
    await expect(verifyToken(edge, forT1)).resolves.toBeDefined();
  });

  it('a_token_for_the_control_plane_is_refused_by_a_broker_and_the_reverse', async () => {
    expect(await failure(mint({ audience: CONTROL_PLANE_AUDIENCE }))).toBe('wrong_audience');
    const cp = { ...forT1, audience: CONTROL_PLANE_AUDIENCE } as const;
    expect(await failure(mint(), cp)).toBe('wrong_audience');
    const both = raw({ aud: [BROKER_AUDIENCE, CONTROL_PLANE_AUDIENCE] })
      .setAudience([BROKER_AUDIENCE, CONTROL_PLANE_AUDIENCE])
      .sign(t1.privateKey);
    expect(await failure(both)).toBe('wrong_audience');
  });

  it('a_token_whose_tid_names_another_tenant_is_refused', async () => {
    expect(await failure(mint({ tenant: 't2', permissions: [] }))).toBe('wrong_tenant');
  });

  it('each_other_bad_token_kind_is_refused_with_its_own_reason', async () => {
    const good = await mint();
    const [h, p, s] = good.split('.') as [string, string, string];
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
    payload.perms = ['stream.publish:stream:t1/*/*'];
    const tampered = `${h}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${s}`;
    expect(await failure(tampered)).toBe('bad_signature');
    expect(await failure(mint({}, stray))).toBe('unknown_kid');
    expect(await failure(raw({ iss: 'someone-else' }).setIssuer('x').sign(t1.privateKey))).toBe(
      'wrong_issuer',
    );
    const hs = raw({}, { alg: 'HS256' }).sign(new Uint8Array(32).fill(7));
    expect(await failure(hs)).toBe('wrong_algorithm');
    expect(
      await failure(
        raw({})
          .setIssuedAt(NOW + 600)
          .sign(t1.privateKey),
      ),
    ).toBe('not_yet_valid');
    expect(
      await failure(
        raw({})
          .setNotBefore(NOW + 600)
          .sign(t1.privateKey),
      ),
    ).toBe('not_yet_valid');
  });

  it('a_malformed_token_is_refused_as_malformed', async () => {
    for (const bad of ['', 'abc', 'a.b.c', `${'x'.repeat(20_000)}.a.b`]) {
      expect(await failure(bad)).toBe('malformed');
    }
    const t = t1.privateKey;
    expect(await failure(raw({ tid: 7 }).sign(t))).toBe('malformed');
    expect(await failure(raw({ perms: 'stream.publish:stream:t1/a/b' }).sign(t))).toBe('malformed');
    expect(await failure(raw({ perms: ['stream.publish:stream:t1/*/b'] }).sign(t))).toBe(
      'malformed',
    );
    expect(await failure(raw({ perms: ['stream.publish:stream:t2/a/b'] }).sign(t))).toBe(
      'malformed',
    );
    expect(await failure(raw({}, { kid: undefined }).sign(t))).toBe('malformed');
    expect(
      await failure(
        raw({})
          .setExpirationTime(NOW + 2 * 86_400)
          .sign(t),
      ),
    ).toBe('malformed');
  });

  it('a_token_minted_in_another_principals_name_carries_its_holder_as_act', async () => {
    const plain = await verifyToken(await mint(), forT1);
    expect(plain.claims.act).toBeUndefined();
    const onBehalf = await verifyToken(await mint({ actor: 'ops' }), forT1);
    expect(onBehalf.claims.sub).toBe('alice');
    expect(onBehalf.claims.act).toEqual({ sub: 'ops' });
    await expect(mint({ actor: '' })).rejects.toThrow(TokenClaimsError);
    const t = t1.privateKey;
    for (const act of ['ops', {}, { sub: 7 }, { sub: '' }, null]) {
      expect(await failure(raw({ act }).sign(t)), JSON.stringify(act)).toBe('malformed');
    }
  });

  it('sign_token_refuses_what_a_verifier_would_refuse', async () => {
    await expect(mint({ lifetimeS: 0 })).rejects.toThrow(TokenClaimsError);
    await expect(mint({ lifetimeS: 10 * 86_400 })).rejects.toThrow(TokenClaimsError);
    await expect(mint({ permissions: ['cache.read:cache:t2/a/b'] })).rejects.toThrow(
      TokenClaimsError,
    );
    await expect(mint({ subject: '' })).rejects.toThrow(TokenClaimsError);
  });

  it('exported_keys_import_back_and_still_sign_and_verify', async () => {
    const pair = await generateSigningKey();
    const set = new InMemoryKeySet();
    await set.addJwks('t9', { keys: [await exportPublicJwk(pair.publicKey, pair.kid)] });
    const restored = await importPrivateJwk(await exportPrivateJwk(pair.privateKey, pair.kid));
    expect(restored.kid).toBe(pair.kid);
    const token = await mint({ tenant: 't9', permissions: [] }, restored);
    const v = await verifyToken(token, {
      audience: BROKER_AUDIENCE,
      tenant: 't9',
      keys: set,
      nowS: NOW,
    });
    expect(v.claims.tid).toBe('t9');
    expect(set.remove('t9', pair.kid)).toBe(true);
    expect(await failure(token, { ...forT1, tenant: 't9', keys: set })).toBe('unknown_kid');
  });

  it('the_verified_token_cache_answers_repeats_but_still_refuses_expiry_and_other_audiences', async () => {
    const cache = new VerifiedTokenCache(2);
    const token = await mint();
    const first = await cache.verify(token, forT1);
    expect(await cache.verify(token, forT1)).toBe(first);
    const later = { ...forT1, nowS: NOW + 900 + TOKEN_CLOCK_SKEW_S };
    await expect(cache.verify(token, later)).rejects.toMatchObject({ reason: 'expired' });
    const cp = { ...forT1, audience: CONTROL_PLANE_AUDIENCE } as const;
    await expect(cache.verify(token, cp)).rejects.toMatchObject({ reason: 'wrong_audience' });
    await cache.verify(await mint({ subject: 'b' }), forT1);
    await cache.verify(await mint({ subject: 'c' }), forT1);
    expect(cache.size).toBe(2);
  });

  it('a_cached_token_is_refused_once_its_signing_key_is_removed', async () => {
    const pair = await generateSigningKey();
    const set = new InMemoryKeySet();
    set.add('t5', pair.kid, pair.publicKey);
    const opts = { ...forT1, tenant: 't5', keys: set };
    const cache = new VerifiedTokenCache();
    const token = await mint({ tenant: 't5', permissions: [] }, pair);
    await cache.verify(token, opts);
    set.remove('t5', pair.kid);
    await expect(cache.verify(token, opts)).rejects.toMatchObject({ reason: 'unknown_kid' });
    expect(cache.size).toBe(0);
  });
});
