#!/usr/bin/env node
// Mints a Felix token from a control plane's bootstrap listener (its `dev-token` route, served
// only with FELIX_BOOTSTRAP_DEV_TOKENS=true on loopback) and prints it. For a laptop or a test
// cluster: production tokens come from `felixctl login --oidc-token` (docs/security.md).
//
//   FELIX_BOOTSTRAP_TOKEN=... node scripts/dev-token.mjs <tenant> <principal> <broker|controlplane> <permission>...
//
// FELIX_BOOTSTRAP_URL picks the listener (default http://127.0.0.1:9095); FELIX_DEV_TOKEN_TTL the
// token's lifetime in seconds (default 900, at most 86400). The tenant must have
// been initialized through the same listener (the quickstart initializes `operator` and `t1`).
const [tenant, principal, audience, ...permissions] = process.argv.slice(2);
const AUDIENCES = { broker: 'felix-broker', controlplane: 'felix-controlplane' };
const bootstrapToken = process.env.FELIX_BOOTSTRAP_TOKEN;
if (!bootstrapToken) {
  console.error(
    'dev-token: FELIX_BOOTSTRAP_TOKEN is not set: export the secret the control plane was started with',
  );
  process.exit(2);
}
if (!tenant || !principal || !AUDIENCES[audience] || permissions.length === 0) {
  console.error(
    'usage: FELIX_BOOTSTRAP_TOKEN=... node scripts/dev-token.mjs <tenant> <principal> <broker|controlplane> <permission>...',
  );
  process.exit(2);
}
const base = process.env.FELIX_BOOTSTRAP_URL ?? 'http://127.0.0.1:9095';
const ttl = process.env.FELIX_DEV_TOKEN_TTL;
if (ttl !== undefined && !/^[1-9][0-9]*$/.test(ttl)) {
  console.error(`dev-token: FELIX_DEV_TOKEN_TTL must be whole seconds (1 to 86400), not ${ttl}`);
  process.exit(2);
}
const NOT_INITIALIZED = `tenant ${tenant} is not initialized on this control plane: run the quickstart once (npx pnpm@10.34.9 run quickstart initializes operator and t1) against the same data directory, or POST .../tenants/${tenant}/initialize to the bootstrap listener`;
const HINTS = {
  FELIX_CONTROLPLANE_UNAUTHENTICATED:
    'FELIX_BOOTSTRAP_TOKEN must be the value the control plane was started with',
  FELIX_CONTROLPLANE_NO_ACTIVE_KEY: NOT_INITIALIZED,
  FELIX_CONTROLPLANE_TENANT_NOT_FOUND: NOT_INITIALIZED,
  FELIX_CONTROLPLANE_ROUTE_NOT_FOUND:
    'this control plane serves no dev tokens: start it with FELIX_BOOTSTRAP_DEV_TOKENS=true',
};
const res = await fetch(
  `${base}/internal/bootstrap/tenants/${encodeURIComponent(tenant)}/dev-token`,
  {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-felix-bootstrap-token': bootstrapToken },
    body: JSON.stringify({
      principal,
      permissions,
      audience: AUDIENCES[audience],
      ...(ttl === undefined ? {} : { ttl_seconds: Number(ttl) }),
    }),
  },
).catch((err) => {
  // fetch says only "fetch failed"; its cause names the refusal.
  const why = err.cause?.message || err.cause?.code || err.message;
  console.error(
    `dev-token: ${base} did not answer (${why}); is the control plane running with ` +
      'FELIX_BOOTSTRAP_ENABLED=true (and FELIX_BOOTSTRAP_URL pointing at its listener)?',
  );
  process.exit(1);
});
const body = await res.json().catch(() => ({}));
if (!res.ok) {
  const hint = HINTS[body.code];
  console.error(
    `dev-token: ${res.status} ${body.code ?? ''} ${body.message ?? ''}${hint ? `; ${hint}` : ''}`,
  );
  process.exit(1);
}
console.log(body.token);
