// Goal: deleting a tenant deletes its signing keys (docs/control-plane.md, "All of it goes with
// its tenant"), and the guard forgets a tenant's keys "at once when it changes them"
// (docs/control-plane.md, Permissions): a token of the deleted tenant must be refused from the
// moment the delete is answered, also when the operator at once creates a tenant of the same
// name for someone else.
// Found in an operator trial: the guard's key cache (TENANT_KEYS_CACHE_TTL_MS, 5 s) is forgotten
// only by the signing-key routes, so for up to 5 s after a DELETE /v1/tenants/{t} the deleted
// tenant's admin token still verified, and could create namespaces in a new tenant of that name.
// Method: the API app over a SQLite store, driven by inject; the clock does not move.
import { afterEach, describe, expect, it } from 'vitest';
import { TenantKeyCache, newSigningKey } from '../src/auth/keys.js';
import { TENANT_KEYS_MISS_REREAD_MS } from '../src/limits.js';
import { ManualClock, openTestStore, testApp } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('tenant delete and the guard', () => {
  it('a_deleted_tenants_token_is_refused_at_once_even_by_a_new_tenant_of_the_same_name', async () => {
    const clock = new ManualClock();
    const o = await openTestStore('sqlite', { clock });
    cleanups.push(() => o.cleanup());
    const api = await testApp(o.store, { background: false });
    cleanups.push(() => api.app.close());
    const operator = { authorization: `Bearer ${await api.tokens.operator()}` };

    expect(
      (
        await api.inject({
          method: 'POST',
          url: '/v1/tenants',
          headers: operator,
          payload: { tenant_id: 'acme' },
        })
      ).statusCode,
    ).toBe(201);
    const oldAdmin = {
      authorization: `Bearer ${await api.tokens.mint('acme', ['tenant.manage:tenant:acme'])}`,
    };
    // The old admin works in its tenant (and the guard now holds acme's keys).
    const before = await api.inject({
      method: 'GET',
      url: '/v1/tenants/acme/namespaces',
      headers: oldAdmin,
    });
    expect(before.statusCode).toBe(200);

    // The operator deletes acme and creates a new tenant of the same name.
    const del = await api.inject({ method: 'DELETE', url: '/v1/tenants/acme', headers: operator });
    expect(del.statusCode).toBe(204);
    const again = await api.inject({
      method: 'POST',
      url: '/v1/tenants',
      headers: operator,
      payload: { tenant_id: 'acme' },
    });
    expect(again.statusCode).toBe(201);

    // The deleted tenant's key is gone from the store: its token must not verify.
    const write = await api.inject({
      method: 'POST',
      url: '/v1/tenants/acme/namespaces',
      headers: oldAdmin,
      payload: { namespace: 'planted' },
    });
    expect(write.statusCode).toBe(401);
    expect((await o.store.namespaces.list('acme', 10)).items).toEqual([]);
  });

  it('a_key_another_instance_made_verifies_within_a_second_not_after_the_cache_ttl', async () => {
    const clock = new ManualClock();
    const o = await openTestStore('sqlite', { clock });
    cleanups.push(() => o.cleanup());
    await o.store.tenants.create({ tenant_id: 'acme', display_name: 'acme' });
    const cache = new TenantKeyCache(o.store, clock);
    await cache.preload('acme');
    // Another control-plane instance (the same store) makes a key: this one's cache lacks it.
    const made = await o.store.signingKeys.stage('acme', await newSigningKey());
    expect(await cache.resolve('acme', made.kid)).toBeNull();
    clock.advance(TENANT_KEYS_MISS_REREAD_MS);
    expect(await cache.resolve('acme', made.kid)).not.toBeNull();
    // An unknown kid read again at most once per interval: a second miss at once is not a read.
    let reads = 0;
    const published = o.store.signingKeys.published.bind(o.store.signingKeys);
    o.store.signingKeys.published = async (t: string) => {
      reads++;
      return published(t);
    };
    expect(await cache.resolve('acme', 'no-such-kid')).toBeNull();
    expect(await cache.resolve('acme', 'no-such-kid')).toBeNull();
    expect(reads).toBe(0);
    clock.advance(TENANT_KEYS_MISS_REREAD_MS);
    expect(await cache.resolve('acme', 'no-such-kid')).toBeNull();
    expect(reads).toBe(1);
  });

  it('a_tenant_holding_cluster_roles_is_deleted_only_with_force', async () => {
    // Deleting the tenant that mints the brokers' node credentials (the quickstart's `operator`)
    // stopped every broker's credential verifying at once; found by an operator trial.
    const o = await openTestStore('sqlite', { clock: new ManualClock() });
    cleanups.push(() => o.cleanup());
    const api = await testApp(o.store, { background: false });
    cleanups.push(() => api.app.close());
    const operator = { authorization: `Bearer ${await api.tokens.operator()}` };
    for (const tenant_id of ['ops', 'plain']) {
      const made = await api.inject({
        method: 'POST',
        url: '/v1/tenants',
        headers: operator,
        payload: { tenant_id },
      });
      expect(made.statusCode).toBe(201);
    }
    await o.store.rbac.addPolicy({
      tenant_id: 'ops',
      role: 'operator',
      action: 'node.manage',
      object: 'cluster:*',
    });
    const refused = await api.inject({
      method: 'DELETE',
      url: '/v1/tenants/ops',
      headers: operator,
    });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().code).toBe('FELIX_CONTROLPLANE_TENANT_HOLDS_CLUSTER_ROLES');
    expect(
      (await api.inject({ method: 'GET', url: '/v1/tenants/ops', headers: operator })).statusCode,
    ).toBe(200);
    // A tenant without such roles goes as before; with ?force=true so does the other.
    const plain = await api.inject({
      method: 'DELETE',
      url: '/v1/tenants/plain',
      headers: operator,
    });
    expect(plain.statusCode).toBe(204);
    const forced = await api.inject({
      method: 'DELETE',
      url: '/v1/tenants/ops?force=true',
      headers: operator,
    });
    expect(forced.statusCode).toBe(204);
    const bad = await api.inject({
      method: 'DELETE',
      url: '/v1/tenants/x?force=yes',
      headers: operator,
    });
    expect(bad.statusCode).toBe(400);
  });
});
