#!/usr/bin/env node
// Mints a Felix token from a control plane's bootstrap listener (its `dev-token` route, served
// only with FELIX_BOOTSTRAP_DEV_TOKENS=true on loopback) and prints it. For a laptop or a test
// cluster: production tokens come from `felixctl login --oidc-token` (docs/security.md).
//
//   FELIX_BOOTSTRAP_TOKEN=... node scripts/dev-token.mjs <tenant> <principal> <broker|controlplane> <permission>...
//
// FELIX_BOOTSTRAP_URL picks the listener (default http://127.0.0.1:9095). The tenant must have
// been initialized through the same listener (the quickstart initializes `operator` and `t1`).
const [tenant, principal, audience, ...permissions] = process.argv.slice(2);
const AUDIENCES = { broker: 'felix-broker', controlplane: 'felix-controlplane' };
const bootstrapToken = process.env.FELIX_BOOTSTRAP_TOKEN;
if (!tenant || !principal || !AUDIENCES[audience] || permissions.length === 0 || !bootstrapToken) {
  console.error(
    'usage: FELIX_BOOTSTRAP_TOKEN=... node scripts/dev-token.mjs <tenant> <principal> <broker|controlplane> <permission>...',
  );
  process.exit(2);
}
const base = process.env.FELIX_BOOTSTRAP_URL ?? 'http://127.0.0.1:9095';
const res = await fetch(
  `${base}/internal/bootstrap/tenants/${encodeURIComponent(tenant)}/dev-token`,
  {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-felix-bootstrap-token': bootstrapToken },
    body: JSON.stringify({ principal, permissions, audience: AUDIENCES[audience] }),
  },
).catch((err) => {
  console.error(
    `dev-token: ${base} did not answer (${err.message}); is the bootstrap listener on?`,
  );
  process.exit(1);
});
const body = await res.json().catch(() => ({}));
if (!res.ok) {
  console.error(`dev-token: ${res.status} ${body.code ?? ''} ${body.message ?? ''}`);
  process.exit(1);
}
console.log(body.token);
