// rbac-live: permissions change while everything runs. A control plane (SQLite) and a broker
// joined to it; tenant `acme` is bootstrapped with an IdP and its admin alice. Bob's app connects
// with a token provider (exchange once, then refresh): its publish, subscribe and cache write are
// forbidden; alice grants them through the RBAC API; the provider's next token carries the grant,
// the client re-authenticates in band and the same calls succeed, with no restart and no
// reconnect; alice removes the binding and the next token is denied again. Prints PASS/FAIL per
// step and exits 1 on any failure. Environment: FELIX_TRANSPORT (quic | tls, default quic).
import { createHash } from 'node:crypto';
import { connect } from '@felix/client';
import {
  cacheServed,
  expectForbidden,
  firstRecord,
  startSecureCluster,
  steps,
  until,
} from '@felix/demo-support';
import { IDP_AUDIENCE, startIdp } from './idp.mjs';

const [TENANT, NS, STREAM, CACHE] = ['acme', 'shop', 'orders', 'carts'];
const T = `/v1/tenants/${TENANT}`;
/** Short-lived tokens, so the client renews (two thirds into the lifetime) within seconds. */
const TOKEN_TTL_S = 6;
const { step, exitCode } = steps();
const transport = process.env.FELIX_TRANSPORT === 'tls' ? 'tls' : 'quic';

const idp = await startIdp();
const cluster = await startSecureCluster({
  name: 'rbac-live',
  cpEnv: { FELIX_EXCHANGE_TOKEN_TTL_SECONDS: String(TOKEN_TTL_S) },
});
/** Where and as which tenant the clients connect. */
const where = {
  servers: cluster.servers.map((s) => s.replace('quic', transport)),
  tenant: TENANT,
  namespace: NS,
  tls: cluster.tls,
};
/** A user's principal id: sha256 of "issuer|subject" (docs/control-plane.md, Exchange). */
const principal = (sub) => createHash('sha256').update(`${idp.issuer}|${sub}`).digest('hex');

/** Trades a user's ID token for a Felix token (and a refresh token) with what RBAC grants now. */
async function exchange(sub, audience) {
  const res = await fetch(`${cluster.cpUrl}${T}/token/exchange`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${await idp.idToken(sub)}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ audience }),
  });
  if (res.status !== 200) throw new Error(`exchange for ${sub}: ${res.status} ${await res.text()}`);
  return res.json();
}
/** A REST call as alice, the tenant admin (a fresh control-plane token each time). */
async function asAlice(method, path, body) {
  const { felix_token } = await exchange('alice', 'felix-controlplane');
  const res = await cluster.api(felix_token, method, path, body);
  if (res.status >= 300)
    throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res;
}

await step('bootstrap tenant acme with its IdP and alice as admin', async () => {
  const res = await cluster.bootstrap(TENANT, 'initialize', {
    idp_issuers: [{ issuer: idp.issuer, audiences: [IDP_AUDIENCE], jwks_url: idp.jwksUrl }],
    initial_admin_principals: [principal('alice')],
  });
  if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  await asAlice('POST', `${T}/namespaces`, { namespace: NS });
  await asAlice('POST', `${T}/namespaces/${NS}/streams`, { stream: STREAM, shards: 1 });
  await asAlice('POST', `${T}/namespaces/${NS}/caches`, { cache: CACHE, shards: 1 });
  // Bob may read the product catalog cache and nothing else (a token needs one permission).
  const reader = { role: 'catalog-reader', permission: `cache.read:cache:${TENANT}/${NS}/catalog` };
  await asAlice('POST', `${T}/rbac/policies`, reader);
  await asAlice('POST', `${T}/rbac/bindings`, { subject: principal('bob'), role: reader.role });
  await cluster.shardsHeld(1);
  // Alice's own broker token (the admin role holds every data action in acme) checks the cache.
  const aliceApp = await connect({
    ...where,
    token: (await exchange('alice', 'felix-broker')).felix_token,
  });
  await cacheServed(aliceApp, CACHE);
  await aliceApp.close();
  return `kid ${res.body.kid}; stream ${STREAM} and cache ${CACHE} in ${TENANT}/${NS}`;
});

// Bob's token provider: the exchange once, then single-use refresh tokens. Each call reads RBAC.
let refreshToken = null;
let providerCalls = 0;
let lastProvided = 0;
let presented = 0;
async function bobsToken() {
  const call = ++providerCalls;
  let answer;
  if (refreshToken === null) {
    answer = await exchange('bob', 'felix-broker');
  } else {
    const res = await fetch(`${cluster.cpUrl}${T}/token/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refresh_token: refreshToken }),
    });
    if (res.status !== 200) throw new Error(`refresh: ${res.status}`);
    answer = await res.json();
  }
  refreshToken = answer.refresh_token;
  lastProvided = call;
  return answer.felix_token;
}
const felix = await connect({ ...where, token: bobsToken });
void (async () => {
  for await (const s of felix.status()) {
    if (s.type === 'token_refreshed' && s.reauthenticated) presented = lastProvided;
  }
})();
/** Waits until the client presented, in band, a token the provider fetched after this call. */
async function nextToken() {
  const after = providerCalls;
  await until('a fresh token presented in band', () => presented > after, TOKEN_TTL_S * 3_000);
  return `token #${presented} presented in band on the same connection`;
}

const orders = `stream:${TENANT}/${NS}/${STREAM}`;
const carts = `cache:${TENANT}/${NS}/${CACHE}`;
const denied = async () =>
  [
    await expectForbidden(() => felix.publish(STREAM, 'order-1'), 'stream.publish', orders),
    await expectForbidden(() => firstRecord(felix, STREAM, 0), 'stream.subscribe', orders),
    await expectForbidden(() => felix.cache(CACHE).put('bob', 'cart'), 'cache.write', carts),
  ].join('; ');

await step('without a grant, publish, subscribe and cache write are each forbidden', denied);

await step('alice grants role orders-app to bob through the RBAC API', async () => {
  for (const permission of [
    `stream.publish:${orders}`,
    `stream.subscribe:${orders}`,
    `cache.write:${carts}`,
    `cache.read:${carts}`,
  ]) {
    await asAlice('POST', `${T}/rbac/policies`, { role: 'orders-app', permission });
  }
  await asAlice('POST', `${T}/rbac/bindings`, { subject: principal('bob'), role: 'orders-app' });
  return nextToken();
});

await step('the same calls now succeed, with no restart', async () => {
  const { offset } = await felix.publish(STREAM, 'order-1');
  const record = await firstRecord(felix, STREAM, offset);
  await felix.cache(CACHE).put('bob', 'cart');
  const cart = new TextDecoder().decode(await felix.cache(CACHE).get('bob'));
  return `published at ${offset}, read back "${new TextDecoder().decode(record.data)}", cart "${cart}"`;
});

await step('alice removes the binding; the next token is in force', async () => {
  await asAlice('DELETE', `${T}/rbac/bindings?subject=${principal('bob')}&role=orders-app`);
  return nextToken();
});

await step('after the revocation, each call is forbidden again', denied);

await felix.close();
await cluster.stop();
await idp.close();
process.exit(exitCode());
