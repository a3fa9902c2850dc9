// One-shot `tokens` service of compose.yaml, run in the control-plane image as root (only to hand
// files to their readers) inside the control plane's network namespace, because the bootstrap
// listener and its dev-token route answer on loopback only. It initializes the operator tenant,
// mints each broker's node credential into the `secrets` volume (brokers re-read it every 30 s,
// so re-running this service renews them), creates the tenant $FELIX_TENANT through the REST API
// and writes an operator token, the tenant admin's token and a client token to /out for the
// host. Every token lives FELIX_TOKEN_TTL_S (a day at most: dev tokens). Re-runs are harmless.
import { chownSync, readFileSync, statSync, writeFileSync } from 'node:fs';

const FELIX_UID = 10001;
const BOOTSTRAP_URL = 'http://127.0.0.1:9095';
const CP_URL = 'http://127.0.0.1:8443';
const BROKERS = (process.env.FELIX_PKI_BROKERS ?? 'broker-1,broker-2,broker-3').split(',');
const TENANT = process.env.FELIX_TENANT ?? 't1';
const NAMESPACE = 'default';
const TTL_S = Number(process.env.FELIX_TOKEN_TTL_S ?? 86_400);
const OPERATOR = 'compose-operator';
const ADMIN = 'compose-admin';
const CLIENT = 'compose-client';
const bootstrapToken = readFileSync('/secrets/bootstrap.token', 'utf8').trim();
/** The checkout's owner: files written to the host's out dir are handed to them. */
const hostOwner = statSync(import.meta.filename);

async function call(url, init, okStatuses = []) {
  const res = await fetch(url, init);
  const body = await res.json().catch(() => null);
  if (!res.ok && !okStatuses.includes(res.status)) {
    throw new Error(`${init.method} ${url}: ${res.status} ${JSON.stringify(body)}`);
  }
  return body;
}

const bootstrap = (tenant, path, body, okStatuses) =>
  call(
    `${BOOTSTRAP_URL}/internal/bootstrap/tenants/${tenant}/${path}`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-felix-bootstrap-token': bootstrapToken },
      body: JSON.stringify(body),
    },
    okStatuses,
  );

const mint = async (tenant, principal, permissions, audience) =>
  (
    await bootstrap(tenant, 'dev-token', {
      principal,
      permissions,
      audience,
      ttl_seconds: TTL_S,
    })
  ).token;

const rest = (token, method, path, body) =>
  call(
    `${CP_URL}${path}`,
    {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    },
    [409],
  );

function put(path, text, uid, gid) {
  writeFileSync(path, `${text}\n`, { mode: 0o600 });
  chownSync(path, uid, gid);
}

async function nodeCredentials() {
  for (const node of BROKERS) {
    const perms = [`node.manage:node:${node}`, 'node.view:cluster:*'];
    const token = await mint('operator', `node-${node}`, perms, 'felix-controlplane');
    put(`/secrets/node-${node}.token`, token, FELIX_UID, FELIX_UID);
  }
}

async function tenantTokens(operatorToken) {
  await rest(operatorToken, 'POST', '/v1/tenants', { tenant_id: TENANT });
  await bootstrap(TENANT, 'initialize', { initial_admin_principals: [ADMIN] }, [409]);
  const scope = `${TENANT}/${NAMESPACE}`;
  const data = [
    `stream.publish:stream:${scope}/*`,
    `stream.subscribe:stream:${scope}/*`,
    `cache.read:cache:${scope}/*`,
    `cache.write:cache:${scope}/*`,
    `group.consume:group:${scope}/*/*`,
  ];
  // The admin also holds the data permissions and token.delegate, so `felixctl token mint`
  // can narrow it into broker tokens (a delegated token never holds more than its source).
  const admin = await mint(
    TENANT,
    ADMIN,
    [`tenant.manage:tenant:${TENANT}`, `token.delegate:tenant:${TENANT}`, ...data],
    'felix-controlplane',
  );
  await rest(admin, 'POST', `/v1/tenants/${TENANT}/namespaces`, { namespace: NAMESPACE });
  const client = await mint(TENANT, CLIENT, data, 'felix-broker');
  return { admin, client };
}

await bootstrap(
  'operator',
  'initialize',
  { display_name: 'Operators', initial_admin_principals: [OPERATOR], operator: true },
  [409],
);
const operatorToken = await mint(
  'operator',
  OPERATOR,
  ['tenant.manage:cluster:*', 'node.view:cluster:*', 'node.manage:cluster:*'],
  'felix-controlplane',
);
await nodeCredentials();
const { admin, client } = await tenantTokens(operatorToken);
put('/out/operator.token', operatorToken, hostOwner.uid, hostOwner.gid);
put('/out/admin.token', admin, hostOwner.uid, hostOwner.gid);
put('/out/client.token', client, hostOwner.uid, hostOwner.gid);
console.log(
  `tokens: node credentials of ${BROKERS.join(', ')}; operator, ${TENANT} admin and client tokens in /out (${TTL_S} s)`,
);
