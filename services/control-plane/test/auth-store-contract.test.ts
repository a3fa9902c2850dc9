// Goal: the auth half of the store contract (signing keys, IdP issuers, RBAC rows, refresh
// tokens, bootstrap), one suite run against SQLite (a temp file) and the real Postgres server
// (a fresh schema per case). Method: every case opens a fresh store and drives the repositories
// directly, including concurrent calls where the store must serialise them.
import { exportPrivateJwk, generateSigningKey } from '@felix/authz';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AlreadyExistsError,
  AlreadyInitializedError,
  AuthLimitError,
  IssuerNotFoundError,
  SigningKeyNotFoundError,
  SigningKeyStateError,
  TenantNotFoundError,
} from '../src/errors.js';
import { SIGNING_KEYS_PUBLISHED_MAX } from '../src/limits.js';
import type { BootstrapInput } from '../src/store/bootstrap.js';
import { groupSubject } from '../src/store/rbac.js';
import type { NewSigningKey } from '../src/store/signing-keys.js';
import type { ControlStore } from '../src/store/store.js';
import type { IdpIssuer, NewRefreshToken } from '../src/store/types.js';
import { type Backend, ManualClock, type OpenedStore, openTestStore } from './helpers.js';

export async function newKey(): Promise<NewSigningKey> {
  const k = await generateSigningKey();
  return { kid: k.kid, private_jwk: { ...(await exportPrivateJwk(k.privateKey, k.kid)) } };
}

const issuer = (name: string, extra: Partial<IdpIssuer> = {}): IdpIssuer => ({
  tenant_id: 't1',
  issuer: name,
  audiences: ['felix'],
  jwks_url: `${name}/jwks`,
  discovery_url: null,
  subject_claim: 'sub',
  groups_claim: 'groups',
  ...extra,
});

const refresh = (id: string, extra: Partial<NewRefreshToken> = {}): NewRefreshToken => ({
  id,
  secret: `secret-${id}`,
  tenant_id: 't1',
  principal_id: 'alice',
  chain_id: 'chain-1',
  parent_id: null,
  expires_at_ms: Date.now() + 60_000,
  ...extra,
});

async function bootstrapInput(tenant: string): Promise<BootstrapInput> {
  return {
    tenant_id: tenant,
    display_name: tenant.toUpperCase(),
    key: await newKey(),
    issuers: [
      {
        issuer: 'https://idp.example',
        audiences: ['felix'],
        jwks_url: null,
        discovery_url: 'https://idp.example/.well-known/openid-configuration',
        subject_claim: 'sub',
        groups_claim: null,
      },
    ],
    roles: [{ role: 'admin', permissions: [`tenant.manage:tenant:${tenant}`] }],
    bindings: [{ subject: 'alice', role: 'admin' }],
  };
}

function authStoreContract(backend: Backend): void {
  describe(`auth store contract on ${backend}`, () => {
    let opened: OpenedStore;
    let store: ControlStore;
    let clock: ManualClock;
    beforeEach(async () => {
      clock = new ManualClock();
      opened = await openTestStore(backend, { clock });
      store = opened.store;
      await store.tenants.create({ tenant_id: 't1', display_name: 'T1' });
    });
    afterEach(async () => {
      await opened.cleanup();
    });

    it('a_signing_key_goes_from_staged_to_active_to_retired_and_only_one_is_active', async () => {
      const a = await newKey();
      const b = await newKey();
      expect((await store.signingKeys.stage('t1', a)).status).toBe('staged');
      expect(await store.signingKeys.active('t1')).toBeUndefined();
      await store.signingKeys.activate('t1', a.kid);
      const active = await store.signingKeys.active('t1');
      expect(active?.kid).toBe(a.kid);
      expect(active?.private_jwk.d).toBe(a.private_jwk.d);
      await store.signingKeys.stage('t1', b);
      // Activating b sends a back to staged: still published, so its tokens keep verifying.
      await store.signingKeys.activate('t1', b.kid);
      const listed = await store.signingKeys.list('t1');
      expect(new Map(listed.map((k) => [k.kid, k.status]))).toEqual(
        new Map([
          [a.kid, 'staged'],
          [b.kid, 'active'],
        ]),
      );
      expect(listed.every((k) => !('private_jwk' in k))).toBe(true);
      expect(listed.find((k) => k.kid === a.kid)?.public_jwk).toEqual({
        kty: 'OKP',
        crv: 'Ed25519',
        x: a.private_jwk.x,
        kid: a.kid,
        alg: 'EdDSA',
        use: 'sig',
      });
      await expect(store.signingKeys.retire('t1', b.kid)).rejects.toBeInstanceOf(
        SigningKeyStateError,
      );
      expect((await store.signingKeys.retire('t1', a.kid)).status).toBe('retired');
      expect((await store.signingKeys.published('t1')).map((k) => k.kid)).toEqual([b.kid]);
      await expect(store.signingKeys.activate('t1', a.kid)).rejects.toBeInstanceOf(
        SigningKeyStateError,
      );
      await expect(store.signingKeys.retire('t1', 'nope')).rejects.toBeInstanceOf(
        SigningKeyNotFoundError,
      );
      await expect(store.signingKeys.stage('t9', await newKey())).rejects.toBeInstanceOf(
        TenantNotFoundError,
      );
    });

    it('concurrent_activations_leave_exactly_one_active_key', async () => {
      const keys = await Promise.all(Array.from({ length: 6 }, newKey));
      for (const k of keys) await store.signingKeys.stage('t1', k);
      await Promise.allSettled(keys.map((k) => store.signingKeys.activate('t1', k.kid)));
      const active = (await store.signingKeys.list('t1')).filter((k) => k.status === 'active');
      expect(active).toHaveLength(1);
    });

    it('a_retire_racing_an_activation_of_the_same_key_never_leaves_the_tenant_without_an_active_key', async () => {
      const first = await newKey();
      await store.signingKeys.stage('t1', first);
      await store.signingKeys.activate('t1', first.kid);
      for (let round = 0; round < 40; round++) {
        const k = await newKey();
        await store.signingKeys.stage('t1', k);
        const [activated, retired] = await Promise.allSettled([
          store.signingKeys.activate('t1', k.kid),
          store.signingKeys.retire('t1', k.kid),
        ]);
        // One of the two wins; whichever order they ran in, the tenant still signs.
        const active = await store.signingKeys.active('t1');
        expect(active, `round ${round}: ${activated.status}/${retired.status}`).toBeDefined();
        if (retired.status === 'fulfilled') expect(active?.kid).not.toBe(k.kid);
        else expect(retired.reason).toBeInstanceOf(SigningKeyStateError);
        // Keep under the published bound: retire what is only staged.
        for (const p of await store.signingKeys.published('t1'))
          if (p.status === 'staged') await store.signingKeys.retire('t1', p.kid);
      }
    });

    it('a_tenant_publishes_a_bounded_number_of_keys', async () => {
      for (let i = 0; i < SIGNING_KEYS_PUBLISHED_MAX; i++)
        await store.signingKeys.stage('t1', await newKey());
      await expect(store.signingKeys.stage('t1', await newKey())).rejects.toBeInstanceOf(
        AuthLimitError,
      );
      const first = (await store.signingKeys.list('t1'))[0]!;
      await store.signingKeys.retire('t1', first.kid);
      await store.signingKeys.stage('t1', await newKey());
    });

    it('issuers_are_created_listed_replaced_and_deleted', async () => {
      expect((await store.issuers.create(issuer('https://b.example'))).created).toBe(true);
      expect((await store.issuers.create(issuer('https://a.example'))).created).toBe(true);
      expect((await store.issuers.create(issuer('https://a.example'))).created).toBe(false);
      await expect(
        store.issuers.create(issuer('https://a.example', { audiences: ['other'] })),
      ).rejects.toBeInstanceOf(AlreadyExistsError);
      expect((await store.issuers.list('t1')).map((i) => i.issuer)).toEqual([
        'https://a.example',
        'https://b.example',
      ]);
      await store.issuers.replace(issuer('https://a.example', { groups_claim: null }));
      expect((await store.issuers.get('t1', 'https://a.example')).groups_claim).toBeNull();
      await store.issuers.delete('t1', 'https://a.example');
      await expect(store.issuers.get('t1', 'https://a.example')).rejects.toBeInstanceOf(
        IssuerNotFoundError,
      );
      await expect(store.issuers.delete('t1', 'https://a.example')).rejects.toBeInstanceOf(
        IssuerNotFoundError,
      );
      await expect(store.issuers.replace(issuer('https://zz.example'))).rejects.toBeInstanceOf(
        IssuerNotFoundError,
      );
    });

    it('policies_and_bindings_grant_the_union_of_bound_roles', async () => {
      const grp = groupSubject('https://idp.example', 'ops');
      await store.rbac.addPolicy({
        tenant_id: 't1',
        role: 'reader',
        action: 'stream.subscribe',
        object: 'stream:t1/ns/*',
      });
      expect(
        (
          await store.rbac.addPolicy({
            tenant_id: 't1',
            role: 'reader',
            action: 'stream.subscribe',
            object: 'stream:t1/ns/*',
          })
        ).created,
      ).toBe(false);
      await store.rbac.addPolicy({
        tenant_id: 't1',
        role: 'writer',
        action: 'stream.publish',
        object: 'stream:t1/ns/orders',
      });
      await store.rbac.addBinding({ tenant_id: 't1', subject: 'alice', role: 'reader' });
      await store.rbac.addBinding({ tenant_id: 't1', subject: grp, role: 'writer' });
      expect(await store.rbac.permissionsFor('t1', ['alice'])).toEqual([
        'stream.subscribe:stream:t1/ns/*',
      ]);
      expect(await store.rbac.permissionsFor('t1', ['alice', grp])).toEqual([
        'stream.publish:stream:t1/ns/orders',
        'stream.subscribe:stream:t1/ns/*',
      ]);
      expect(await store.rbac.permissionsFor('t1', [])).toEqual([]);
      expect((await store.rbac.listPolicies('t1')).map((p) => p.role)).toEqual([
        'reader',
        'writer',
      ]);
      expect((await store.rbac.listPolicies('t1', 'writer')).map((p) => p.action)).toEqual([
        'stream.publish',
      ]);
      expect((await store.rbac.listBindings('t1', { subject: grp })).map((b) => b.role)).toEqual([
        'writer',
      ]);
      expect(
        (await store.rbac.listBindings('t1', { role: 'reader' })).map((b) => b.subject),
      ).toEqual(['alice']);
      expect(
        await store.rbac.deleteBinding({ tenant_id: 't1', subject: 'alice', role: 'reader' }),
      ).toBe(true);
      expect(
        await store.rbac.deleteBinding({ tenant_id: 't1', subject: 'alice', role: 'reader' }),
      ).toBe(false);
      expect(await store.rbac.permissionsFor('t1', ['alice'])).toEqual([]);
      expect(
        await store.rbac.deletePolicy({
          tenant_id: 't1',
          role: 'writer',
          action: 'stream.publish',
          object: 'stream:t1/ns/orders',
        }),
      ).toBe(true);
      expect(await store.rbac.permissionsFor('t1', [grp])).toEqual([]);
      await expect(
        store.rbac.addBinding({ tenant_id: 't9', subject: 'alice', role: 'reader' }),
      ).rejects.toBeInstanceOf(TenantNotFoundError);
    });

    it('rbac_rows_of_one_tenant_never_grant_in_another', async () => {
      await store.tenants.create({ tenant_id: 't2', display_name: 'T2' });
      await store.rbac.addPolicy({
        tenant_id: 't1',
        role: 'admin',
        action: 'tenant.manage',
        object: 'tenant:t1',
      });
      await store.rbac.addBinding({ tenant_id: 't2', subject: 'alice', role: 'admin' });
      expect(await store.rbac.permissionsFor('t2', ['alice'])).toEqual([]);
      expect(await store.rbac.permissionsFor('t1', ['alice'])).toEqual([]);
    });

    it('a_refresh_token_is_spent_once_and_only_its_hash_is_stored', async () => {
      await store.refreshTokens.insert(
        refresh('r1', {
          groups: ['https://idp#ops'],
          requested: ['cache.read:cache:t1/ns/c'],
          audience: 'felix-broker',
        }),
      );
      const raw = await store.driver.query<Record<string, unknown>>(
        'SELECT * FROM refresh_tokens WHERE id = $1',
        ['r1'],
      );
      expect(JSON.stringify(raw)).not.toContain('secret-r1');
      const first = await store.refreshTokens.spend('t1', 'r1', 'secret-r1', clock.nowMs());
      expect(first.outcome).toBe('spent');
      if (first.outcome === 'spent') {
        expect(first.token).toMatchObject({
          principal_id: 'alice',
          chain_id: 'chain-1',
          groups: ['https://idp#ops'],
          requested: ['cache.read:cache:t1/ns/c'],
          resources: null,
          audience: 'felix-broker',
        });
      }
      expect((await store.refreshTokens.get('r1'))?.state).toBe('spent');
      expect(
        (await store.refreshTokens.spend('t2', 'r1', 'secret-r1', clock.nowMs())).outcome,
      ).toBe('unknown');
    });

    it('a_replayed_refresh_token_revokes_its_whole_chain', async () => {
      await store.refreshTokens.insert(refresh('r1'));
      expect(
        (await store.refreshTokens.spend('t1', 'r1', 'secret-r1', clock.nowMs())).outcome,
      ).toBe('spent');
      await store.refreshTokens.insert(refresh('r2', { parent_id: 'r1' }));
      await store.refreshTokens.insert(refresh('other', { chain_id: 'chain-2' }));
      const replay = await store.refreshTokens.spend('t1', 'r1', 'secret-r1', clock.nowMs());
      expect(replay).toEqual({ outcome: 'replayed', revoked: 2 });
      expect((await store.refreshTokens.get('r2'))?.state).toBe('revoked');
      expect(
        (await store.refreshTokens.spend('t1', 'r2', 'secret-r2', clock.nowMs())).outcome,
      ).toBe('revoked');
      expect((await store.refreshTokens.get('other'))?.state).toBe('live');
      // A child stored after the chain was revoked is born revoked.
      const late = await store.refreshTokens.insert(refresh('r3', { parent_id: 'r2' }));
      expect(late.state).toBe('revoked');
    });

    it('a_wrong_secret_or_an_expired_token_spends_the_refresh_token', async () => {
      await store.refreshTokens.insert(refresh('r1'));
      expect((await store.refreshTokens.spend('t1', 'r1', 'guess', clock.nowMs())).outcome).toBe(
        'wrong_secret',
      );
      expect(
        (await store.refreshTokens.spend('t1', 'r1', 'secret-r1', clock.nowMs())).outcome,
      ).toBe('replayed');
      await store.refreshTokens.insert(
        refresh('old', { chain_id: 'c3', expires_at_ms: clock.nowMs() - 1 }),
      );
      expect(
        (await store.refreshTokens.spend('t1', 'old', 'secret-old', clock.nowMs())).outcome,
      ).toBe('expired');
      expect(await store.refreshTokens.deleteExpired(clock.nowMs())).toBe(1);
      expect(await store.refreshTokens.get('old')).toBeUndefined();
    });

    it('concurrent_spends_of_one_refresh_token_succeed_once', async () => {
      await store.refreshTokens.insert(refresh('r1'));
      const outcomes = await Promise.all(
        Array.from({ length: 8 }, () =>
          store.refreshTokens.spend('t1', 'r1', 'secret-r1', clock.nowMs()),
        ),
      );
      expect(outcomes.filter((o) => o.outcome === 'spent')).toHaveLength(1);
      expect(
        outcomes.filter(
          (o) => o.outcome === 'spent' || o.outcome === 'replayed' || o.outcome === 'revoked',
        ),
      ).toHaveLength(8);
    });

    it('revoking_by_principal_revokes_only_that_principals_live_tokens', async () => {
      await store.refreshTokens.insert(refresh('a1'));
      await store.refreshTokens.insert(refresh('a2', { chain_id: 'c2' }));
      await store.refreshTokens.insert(refresh('b1', { principal_id: 'bob', chain_id: 'c3' }));
      expect(await store.refreshTokens.revokeByPrincipal('t1', 'alice')).toBe(2);
      expect(await store.refreshTokens.revokeByPrincipal('t1', 'alice')).toBe(0);
      expect((await store.refreshTokens.get('b1'))?.state).toBe('live');
      expect(await store.refreshTokens.revokeChain('c3')).toBe(1);
      expect((await store.refreshTokens.get('b1'))?.state).toBe('revoked');
    });

    it('bootstrap_writes_tenant_key_issuers_roles_and_bindings_once', async () => {
      const input = await bootstrapInput('t5');
      const from = (await store.feeds.snapshot('tenants')).next_seq;
      const r = await store.bootstrap.initialize(input);
      expect(r).toMatchObject({ tenant_created: true, kid: input.key.kid });
      expect(await store.bootstrap.isBootstrapped('t5')).toBe(true);
      expect((await store.signingKeys.active('t5'))?.kid).toBe(input.key.kid);
      expect((await store.issuers.list('t5')).map((i) => i.issuer)).toEqual([
        'https://idp.example',
      ]);
      expect(await store.rbac.permissionsFor('t5', ['alice'])).toEqual(['tenant.manage:tenant:t5']);
      expect((await store.feeds.changes('tenants', from, 10)).items.map((c) => c.op)).toEqual([
        'created',
      ]);
      await expect(store.bootstrap.initialize(await bootstrapInput('t5'))).rejects.toBeInstanceOf(
        AlreadyInitializedError,
      );
      expect(await store.signingKeys.list('t5')).toHaveLength(1);
      // An existing, uninitialized tenant is initialized in place.
      expect(await store.bootstrap.isBootstrapped('t1')).toBe(false);
      const t1 = await store.bootstrap.initialize(await bootstrapInput('t1'));
      expect(t1.tenant_created).toBe(false);
      expect(t1.tenant.display_name).toBe('T1');
    });

    it('a_failed_bootstrap_leaves_nothing_behind', async () => {
      const input = await bootstrapInput('t6');
      // A bad key fails the transaction after the tenant row and the flag were written.
      const bad = { ...input, key: { kid: 'k', private_jwk: { kty: 'RSA' } } };
      await expect(store.bootstrap.initialize(bad)).rejects.toBeInstanceOf(SigningKeyStateError);
      await expect(store.tenants.get('t6')).rejects.toBeInstanceOf(TenantNotFoundError);
      expect(await store.bootstrap.isBootstrapped('t6')).toBe(false);
      await store.bootstrap.initialize(input);
      expect(await store.bootstrap.isBootstrapped('t6')).toBe(true);
    });

    it('concurrent_bootstraps_of_one_tenant_commit_exactly_one', async () => {
      const inputs = await Promise.all(Array.from({ length: 5 }, () => bootstrapInput('t7')));
      const results = await Promise.allSettled(inputs.map((i) => store.bootstrap.initialize(i)));
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of results)
        if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(AlreadyInitializedError);
      expect(await store.signingKeys.list('t7')).toHaveLength(1);
    });

    it('deleting_a_tenant_deletes_its_auth_state', async () => {
      await store.bootstrap.initialize(await bootstrapInput('t1'));
      await store.refreshTokens.insert(refresh('r1'));
      await store.tenants.delete('t1');
      for (const table of [
        'tenant_signing_keys',
        'idp_issuers',
        'rbac_policies',
        'rbac_bindings',
        'refresh_tokens',
      ]) {
        const rows = await store.driver.query<{ n: unknown }>(`SELECT COUNT(*) AS n FROM ${table}`);
        expect(Number(rows[0]!.n), table).toBe(0);
      }
    });
  });
}

for (const backend of ['sqlite', 'postgres'] as const) authStoreContract(backend);
