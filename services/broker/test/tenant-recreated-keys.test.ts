// Goal: an operator who deletes a tenant and initializes it again (docs/control-plane.md,
// "Every write is one transaction. Deleting a tenant ... deletes everything under it";
// docs/security.md, Bootstrap) gets a tenant whose brokers trust its new signing key and no
// longer trust the deleted tenant's: the deleted tenant's tokens must not open the new tenant's
// streams, and the new tenant's tokens must be served.
// Found in an operator trial: a broker that had verified one token of the old tenant kept its
// JWKS for the hour it caches a key set (and an unknown kid never refetches), so after the
// delete and the new bootstrap it accepted the old tenant's tokens and refused every token of
// the new one with `no signing key <new kid> for this tenant` for up to an hour.
// Method: real processes from the built dist/ of both services (control plane on SQLite with
// its bootstrap listener, one broker in `tokens` mode joined to it); raw `auth` frames.
import { join } from 'node:path';
import { rawAuthed } from '@felix/testing-e2e';
import { type Child, freePort, tempDir, waitFor } from '@felix/testing-harness';
import { dial } from '@felix/transport';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BOOTSTRAP_TOKEN,
  OPERATOR_PERMISSIONS,
  type Running,
  SETTLE_MS,
  bootstrapToken,
  nodeToken,
  startClusterBroker,
  startControlPlane,
} from './support/cluster.js';

const FEATURES = 0x0fff_ffff;

async function bootstrapPost(bootPort: number, tenant: string, path: string, body: unknown) {
  const res = await fetch(
    `http://127.0.0.1:${bootPort}/internal/bootstrap/tenants/${tenant}/${path}`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-felix-bootstrap-token': BOOTSTRAP_TOKEN },
      body: JSON.stringify(body),
    },
  );
  const json = (await res.json()) as { token?: string; kid?: string };
  if (res.status >= 400)
    throw new Error(`bootstrap ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** A broker-audience token of `tenant`, signed with its active key. */
async function brokerToken(bootPort: number, tenant: string, principal: string) {
  const r = await bootstrapPost(bootPort, tenant, 'dev-token', {
    principal,
    permissions: [`stream.publish:stream:${tenant}/*/*`, `stream.subscribe:stream:${tenant}/*/*`],
    audience: 'felix-broker',
  });
  return r.token!;
}

/** Whether the broker answers `auth_ok` to this tenant and token. */
async function accepted(b: Running, tenant: string, token: string): Promise<boolean> {
  const conn = await dial(`quic://127.0.0.1:${b.port}`, { fingerprint: b.fingerprint });
  try {
    await rawAuthed(conn, FEATURES, undefined, 0x1fff, { tenant, token });
    return true;
  } catch {
    return false;
  } finally {
    // A connection the broker already closed has nothing left to close.
    await conn.close({ code: 0, reason: 'done' }).catch(() => {});
  }
}

describe('a tenant deleted and initialized again', () => {
  let cp: Child;
  let broker: Running;
  let cpUrl: string;
  let bootPort: number;
  let operator: string;
  const cleanups: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    const dir = await tempDir('felix-tenant-recreate-');
    cleanups.push(() => dir.cleanup());
    const cpPort = await freePort();
    bootPort = await freePort();
    cpUrl = `http://127.0.0.1:${cpPort}`;
    cp = await startControlPlane(join(dir.path, 'cp'), cpPort, bootPort);
    operator = await bootstrapToken(bootPort, 'operator', OPERATOR_PERMISSIONS, {
      operator: true,
    });
    broker = await startClusterBroker(dir.path, {
      FELIX_CONTROLPLANE_URL: cpUrl,
      FELIX_NODE_ID: 'b1',
      FELIX_NODE_TOKEN: await nodeToken(bootPort, 'b1'),
      // Tokens are under test here: the broker verifies them against the control plane's keys.
      FELIX_AUTH_MODE: 'tokens',
      FELIX_AUTH_DEV_WITH_CONTROLPLANE: 'false',
    });
  }, 60_000);

  afterAll(async () => {
    await broker?.child.stop();
    await cp?.stop();
    for (const c of cleanups.reverse()) await c();
  });

  it('a_tenant_deleted_and_initialized_again_is_served_with_its_new_keys_and_not_its_old_ones', async () => {
    await bootstrapPost(bootPort, 'acme', 'initialize', { initial_admin_principals: ['alice'] });
    const oldToken = await brokerToken(bootPort, 'acme', 'old-app');
    // The broker has verified a token of the tenant (and so holds its key set).
    await waitFor(() => accepted(broker, 'acme', oldToken), 'the old tenant token', SETTLE_MS);

    // The operator deletes the tenant; a new one of the same name is initialized.
    const del = await fetch(`${cpUrl}/v1/tenants/acme`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${operator}` },
    });
    expect(del.status).toBe(204);
    await bootstrapPost(bootPort, 'acme', 'initialize', { initial_admin_principals: ['bob'] });
    const newToken = await brokerToken(bootPort, 'acme', 'new-app');

    // The new tenant's tokens are served (within a few failure-memory periods, not an hour)...
    await waitFor(
      () => accepted(broker, 'acme', newToken),
      "the new tenant's token to be accepted",
      15_000,
    );
    // ...and the deleted tenant's are not.
    expect(await accepted(broker, 'acme', oldToken)).toBe(false);
  }, 90_000);
});
