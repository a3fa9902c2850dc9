// Goal: upstream OIDC tokens verify only against the tenant's configured issuer, with exact
// issuer and audience, allow-listed algorithms, keys from the JWKS (directly or through
// discovery), a bounded refetch on an unknown kid, and no redirects; identities map to the
// Felix principal id and group subjects.
// Method: a fake IdP on loopback (node:http, jose keys); OidcVerifier called directly.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type IdpIssuerConfig, checkIdpUrl, parseIdpIssuer } from '../src/auth/idp-issuer.js';
import { OidcVerifier, parseOidcAlgorithms, principalIdOf } from '../src/auth/oidc.js';
import { tokenSettingsFromEnv } from '../src/auth/settings.js';
import { IdpIssuerInvalidError, OidcTokenRefusedError } from '../src/errors.js';
import { type FakeIdp, startFakeIdp } from './fake-idp.js';

let idp: FakeIdp;
let issuer: IdpIssuerConfig;

beforeAll(async () => {
  idp = await startFakeIdp();
  issuer = parseIdpIssuer('t1', {
    issuer: idp.issuer,
    audiences: ['felix'],
    jwks_url: idp.jwksUrl,
    groups_claim: 'groups',
  });
});
afterAll(() => idp.close());

async function refusal(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OidcTokenRefusedError);
  return (err as OidcTokenRefusedError).reason;
}

describe('upstream OIDC verification', () => {
  it('an_upstream_token_maps_to_the_principal_id_and_group_subjects', async () => {
    const v = new OidcVerifier();
    const token = await idp.token({ sub: 'alice', groups: ['ops', 'dev', 'ops'] });
    const who = await v.verify(token, [issuer]);
    const expected = createHash('sha256').update(`${idp.issuer}|alice`).digest('hex');
    expect(who.principalId).toBe(expected);
    expect(principalIdOf(idp.issuer, 'alice')).toBe(expected);
    expect(who.groups).toEqual([`${idp.issuer}#ops`, `${idp.issuer}#dev`]);
    const rs = await v.verify(await idp.token({ sub: 'bob' }, { alg: 'RS256' }), [issuer]);
    expect(rs.subject).toBe('bob');
  });

  it('an_upstream_token_needs_the_exact_issuer_and_one_of_the_audiences', async () => {
    const v = new OidcVerifier();
    expect(
      await refusal(v.verify(await idp.token({ sub: 'a' }, { audience: 'felix2' }), [issuer])),
    ).toBe('claim aud rejected');
    const other = await idp.token({ sub: 'a' }, { issuer: `${idp.url}` });
    expect(await refusal(v.verify(other, [issuer]))).toBe('issuer not trusted by this tenant');
    expect(await refusal(v.verify('not.a.jwt', [issuer]))).toBe('not a JWT');
    const expired = await idp.token({ sub: 'a' }, { expiresInS: -120 });
    expect(await refusal(v.verify(expired, [issuer]))).toBe('expired');
    const noSub = await idp.token({});
    expect(await refusal(v.verify(noSub, [issuer]))).toBe('claim sub missing');
  });

  it('only_allow_listed_algorithms_verify_an_upstream_token', async () => {
    const es384 = await idp.token({ sub: 'a' }, { alg: 'ES384' });
    expect(await refusal(new OidcVerifier().verify(es384, [issuer]))).toBe('algorithm not allowed');
    const rs = await idp.token({ sub: 'a' }, { alg: 'RS256' });
    const esOnly = new OidcVerifier({ algorithms: ['ES256'] });
    expect(await refusal(esOnly.verify(rs, [issuer]))).toBe('algorithm not allowed');
    const wide = new OidcVerifier({ algorithms: parseOidcAlgorithms('ES256, ES384') ?? [] });
    expect((await wide.verify(es384, [issuer])).subject).toBe('a');
    expect(() => parseOidcAlgorithms('HS256')).toThrow(/unsupported HS256/);
  });

  it('discovery_supplies_the_jwks_only_when_it_names_the_same_issuer', async () => {
    const v = new OidcVerifier();
    const viaDiscovery = parseIdpIssuer('t1', {
      issuer: idp.issuer,
      audiences: ['felix'],
      discovery_url: idp.discoveryUrl,
    });
    const token = await idp.token({ sub: 'carol' });
    expect((await v.verify(token, [viaDiscovery])).subject).toBe('carol');
    // The same server's discovery document names `<url>/`, not `<url>`: an inexact issuer.
    const inexact = { ...viaDiscovery, issuer: idp.url };
    const t2 = await idp.token({ sub: 'carol' }, { issuer: idp.url });
    expect(await refusal(new OidcVerifier().verify(t2, [inexact]))).toBe(
      'discovery document names another issuer',
    );
  });

  it('an_unknown_kid_refetches_the_jwks_at_most_once_per_cooldown', async () => {
    const v = new OidcVerifier();
    await v.verify(await idp.token({ sub: 'a' }), [issuer]);
    const before = idp.jwksFetches;
    const unknown = await idp.token({ sub: 'a' }, { kid: 'nobody' });
    expect(await refusal(v.verify(unknown, [issuer]))).toBe('no key with that kid');
    expect(await refusal(v.verify(unknown, [issuer]))).toBe('no key with that kid');
    expect(idp.jwksFetches - before).toBe(0); // within the 30 s cooldown of the first fetch
    const eager = new OidcVerifier({ cooldownMs: 0 });
    await eager.verify(await idp.token({ sub: 'a' }), [issuer]);
    await idp.rotate(); // a new key the cached set does not know yet
    const rotated = await idp.token({ sub: 'a' });
    expect((await eager.verify(rotated, [issuer])).subject).toBe('a');
  });

  it('a_redirecting_jwks_url_is_not_followed', async () => {
    const redirecting = { ...issuer, jwks_url: idp.redirectUrl };
    const before = idp.jwksFetches;
    const token = await idp.token({ sub: 'a' });
    const reason = await refusal(new OidcVerifier().verify(token, [redirecting]));
    expect(reason).toBe('keys could not be fetched');
    expect(idp.jwksFetches).toBe(before);
  });

  it('issuer_urls_must_be_https_except_on_loopback_and_an_issuer_may_not_contain_a_hash', () => {
    const base = { issuer: 'https://idp.example.com/', audiences: ['felix'] };
    expect(() =>
      parseIdpIssuer('t1', { ...base, issuer: 'https://idp#x', jwks_url: 'https://a/k' }),
    ).toThrow(IdpIssuerInvalidError);
    expect(() => parseIdpIssuer('t1', { ...base, jwks_url: 'http://idp.example.com/k' })).toThrow(
      /https/,
    );
    expect(() => parseIdpIssuer('t1', { ...base })).toThrow(/exactly one/);
    expect(() =>
      parseIdpIssuer('t1', { ...base, jwks_url: 'https://a/k', discovery_url: 'https://a/d' }),
    ).toThrow(/exactly one/);
    expect(() => checkIdpUrl('https://169.254.169.254/keys', 'jwks_url')).toThrow(/private/);
    expect(() => checkIdpUrl('https://10.1.2.3/keys', 'jwks_url')).toThrow(/private/);
    expect(() => checkIdpUrl('https://user:pw@idp.example.com/k', 'jwks_url')).toThrow(/user/);
    expect(checkIdpUrl('http://127.0.0.1:9/k', 'jwks_url').port).toBe('9');
    expect(
      parseIdpIssuer('t1', { ...base, jwks_url: 'https://idp.example.com/k' }).subject_claim,
    ).toBe('sub');
  });

  it('token_settings_come_from_the_environment_and_refuse_bad_values', async () => {
    const d = tokenSettingsFromEnv({});
    expect([d.accessTtlS, d.refreshTtlS]).toEqual([900, 2_592_000]);
    const s = tokenSettingsFromEnv({
      FELIX_EXCHANGE_TOKEN_TTL_SECONDS: '300',
      FELIX_REFRESH_TOKEN_TTL_SECONDS: '3600',
      FELIX_CONTROLPLANE_OIDC_ALLOWED_ALGORITHMS: 'ES384',
    });
    expect([s.accessTtlS, s.refreshTtlS]).toEqual([300, 3600]);
    const es256 = await idp.token({ sub: 'a' });
    expect(await refusal(s.oidc!.verify(es256, [issuer]))).toBe('algorithm not allowed');
    expect(() => tokenSettingsFromEnv({ FELIX_EXCHANGE_TOKEN_TTL_SECONDS: '90000' })).toThrow(
      /FELIX_EXCHANGE_TOKEN_TTL_SECONDS/,
    );
    expect(() =>
      tokenSettingsFromEnv({ FELIX_CONTROLPLANE_OIDC_ALLOWED_ALGORITHMS: 'none' }),
    ).toThrow(/unsupported none/);
  });
});
