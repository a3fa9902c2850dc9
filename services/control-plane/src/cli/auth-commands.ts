/**
 * felixctl's auth commands: `login` (stores a token in the credentials file), `token
 * exchange|refresh|mint|revoke`, `rbac policies|bindings list|add|remove`, and `idp-issuers`.
 */
import { CONTROL_PLANE_AUDIENCE, TOKEN_CLOCK_SKEW_S } from '@felix/authz';
import type { Command } from 'commander';
import { decodeJwt } from 'jose';
import { type Api, type Json, seg } from './api.js';
import { type Credentials, readCredentials, writeCredentials } from './credentials.js';
import { UsageError } from './data/report.js';
import { wholeNumber } from './data/values.js';

/** What the auth commands need besides the API: the credentials file and the resolved tenant. */
export interface AuthContext {
  api: Api;
  credentialsPath: string;
  stored: () => Credentials;
  /** The --token or FELIX_TOKEN given on this run (not the stored one). */
  explicitToken: () => string | undefined;
  url: () => string;
}

const collect = (v: string, acc: string[]) => [...acc, v];

function tenantOf(ctx: AuthContext, o: { tenant?: string }): string {
  const t = o.tenant ?? ctx.stored().tenant;
  if (!t) throw new Error('no tenant: pass --tenant or log in with one');
  return t;
}

/**
 * A login replaces the stored credentials as a whole: nothing of an earlier login survives it
 * (a refresh token left behind would trade back to the earlier principal, URL or tenant).
 */
async function saveLogin(ctx: AuthContext, login: Credentials): Promise<void> {
  await writeCredentials(ctx.credentialsPath, login);
}

/** Updates some stored fields, keeping the rest (a refresh keeps the URL and tenant). */
async function save(ctx: AuthContext, patch: Credentials): Promise<void> {
  const current = await readCredentials(ctx.credentialsPath);
  await writeCredentials(ctx.credentialsPath, { ...current, ...patch });
}

function tokenOutput(ctx: AuthContext, res: Json): void {
  if (ctx.api.target().json) ctx.api.out(JSON.stringify(res, null, 2));
  else ctx.api.out(String(res.felix_token));
}

/**
 * Refuses, before storing it, a token every later command would be refused with: not a Felix
 * token, one for the brokers, another tenant's, or expired. Read, not verified (no request is
 * made): the control plane verifies it on every call.
 */
function checkLoginToken(token: string, tenant: string, nowS = Date.now() / 1000): void {
  let claims: { aud?: unknown; tid?: unknown; exp?: unknown };
  try {
    claims = decodeJwt(token);
  } catch {
    // Whatever the parser says, the answer is the same: not a token felixctl can log in with.
    throw new UsageError(
      'login --token: this is not a Felix token (a JWT)',
      'mint one (scripts/dev-token.mjs ... controlplane ...) or use --oidc-token',
    );
  }
  if (claims.aud !== CONTROL_PLANE_AUDIENCE) {
    throw new UsageError(
      `this token is for audience ${String(claims.aud)}, not ${CONTROL_PLANE_AUDIENCE}`,
      'felixctl login takes a control-plane token; a broker token goes in --token or FELIX_TOKEN of a data verb',
    );
  }
  if (claims.tid !== tenant) {
    throw new UsageError(`this token is for tenant ${String(claims.tid)}, not ${tenant}`);
  }
  // The control plane allows TOKEN_CLOCK_SKEW_S of skew; so does this check.
  if (typeof claims.exp === 'number' && claims.exp + TOKEN_CLOCK_SKEW_S <= nowS) {
    const at = new Date(claims.exp * 1000).toISOString();
    throw new UsageError(`this token expired at ${at}`, 'mint a fresh one');
  }
}

function loginCommand(program: Command, ctx: AuthContext): void {
  program
    .command('login')
    .description(
      'store a Felix token (given, or exchanged for an OIDC token) in the credentials file',
    )
    .requiredOption('--tenant <tenant>', 'the tenant the token belongs to')
    .option('--oidc-token <token>', 'exchange this upstream OIDC token instead of storing --token')
    .action(async (o: { tenant: string; oidcToken?: string }) => {
      const base: Credentials = { url: ctx.url(), tenant: o.tenant };
      if (o.oidcToken) {
        const res = await ctx.api.call(
          'POST',
          `/v1/tenants/${seg(o.tenant)}/token/exchange`,
          {},
          {
            bearer: o.oidcToken,
          },
        );
        await saveLogin(ctx, {
          ...base,
          token: String(res.felix_token),
          refresh_token: String(res.refresh_token),
        });
      } else {
        const token = ctx.explicitToken();
        if (!token) throw new Error('login needs --token (or FELIX_TOKEN) or --oidc-token');
        checkLoginToken(token, o.tenant);
        await saveLogin(ctx, { ...base, token });
      }
      ctx.api.out(`logged in to ${o.tenant} at ${base.url}; credentials in ${ctx.credentialsPath}`);
    });
}

interface NarrowingOptions {
  permission?: string[];
  resource?: string[];
  audience?: string;
}

function narrowing(o: NarrowingOptions): Json {
  const body: Json = {};
  if (o.permission && o.permission.length > 0) body.requested = o.permission;
  if (o.resource && o.resource.length > 0) body.resources = o.resource;
  if (o.audience) body.audience = o.audience;
  return body;
}

function exchangeCommand(token: Command, ctx: AuthContext): void {
  token
    .command('exchange')
    .description('exchange an upstream OIDC token for a Felix token and a refresh token')
    .option('--tenant <tenant>')
    .requiredOption('--oidc-token <token>', 'the upstream token')
    .option('--permission <p>', 'keep only this permission (repeatable)', collect, [])
    .option('--resource <object>', 'keep only permissions on this object (repeatable)', collect, [])
    .option('--audience <aud>', 'felix-controlplane (default) or felix-broker')
    .option('--save', 'store the new tokens in the credentials file')
    .action(
      async (o: NarrowingOptions & { oidcToken: string; save?: boolean; tenant?: string }) => {
        const t = tenantOf(ctx, o);
        const res = await ctx.api.call(
          'POST',
          `/v1/tenants/${seg(t)}/token/exchange`,
          narrowing(o),
          {
            bearer: o.oidcToken,
          },
        );
        if (o.save) {
          await saveLogin(ctx, {
            url: ctx.url(),
            tenant: t,
            token: String(res.felix_token),
            refresh_token: String(res.refresh_token),
          });
        }
        ctx.api.out(JSON.stringify(res, null, 2));
      },
    );
}

function tokenCommands(program: Command, ctx: AuthContext): void {
  const token = program.command('token').description('Felix tokens');
  exchangeCommand(token, ctx);
  token
    .command('refresh')
    .description('trade a refresh token (default: the stored one, which is then replaced)')
    .option('--tenant <tenant>')
    .option('--refresh-token <token>')
    .option('--audience <aud>')
    .action(async (o: { tenant?: string; refreshToken?: string; audience?: string }) => {
      const t = tenantOf(ctx, o);
      const stored = ctx.stored().refresh_token;
      const refresh = o.refreshToken ?? stored;
      if (!refresh)
        throw new Error('no refresh token: pass --refresh-token or log in with --oidc-token');
      const body: Json = { refresh_token: refresh };
      if (o.audience) body.audience = o.audience;
      const res = await ctx.api.call('POST', `/v1/tenants/${seg(t)}/token/refresh`, body, {
        anonymous: true,
      });
      // The stored refresh token is spent now: keep its successor (and the new access token).
      if (o.refreshToken === undefined) {
        await save(ctx, {
          token: String(res.felix_token),
          refresh_token: String(res.refresh_token),
        });
      }
      tokenOutput(ctx, res);
    });
  mintCommand(token, ctx);
  token
    .command('revoke <principal_id>')
    .description('revoke every live refresh token of a principal')
    .option('--tenant <tenant>')
    .action(async (principal: string, o: { tenant?: string }) => {
      const t = tenantOf(ctx, o);
      const res = await ctx.api.call('POST', `/v1/tenants/${seg(t)}/refresh-tokens/revoke`, {
        principal_id: principal,
      });
      ctx.api.done(`revoked ${String(res.revoked)} refresh token(s)`, res);
    });
}

function mintCommand(token: Command, ctx: AuthContext): void {
  token
    .command('mint')
    .description('mint a token within your own scope (token.delegate), by default for a broker')
    .option('--tenant <tenant>')
    .option('--subject <principal_id>', 'whom the token names (default: you)')
    .option(
      '--permission <p>',
      'grant this permission (repeatable; default: all you may)',
      collect,
      [],
    )
    .option('--resource <object>', 'only on this object (repeatable)', collect, [])
    .option('--audience <aud>', 'felix-broker (default) or felix-controlplane')
    .option('--ttl <seconds>', 'lifetime (at most 900)', wholeNumber('--ttl'))
    .action(async (o: NarrowingOptions & { tenant?: string; subject?: string; ttl?: number }) => {
      const t = tenantOf(ctx, o);
      const body = narrowing(o);
      if (o.subject) body.subject = o.subject;
      if (o.ttl !== undefined) body.ttl_seconds = o.ttl;
      tokenOutput(ctx, await ctx.api.call('POST', `/v1/tenants/${seg(t)}/token/delegate`, body));
    });
}

function rbacCommands(program: Command, ctx: AuthContext): void {
  const { api } = ctx;
  const rbac = program.command('rbac').description('roles, their policies, and bindings');
  const policies = rbac.command('policies').description('role → permission rules');
  const pBase = (t: string) => `/v1/tenants/${seg(t)}/rbac/policies`;
  policies
    .command('list <tenant>')
    .option('--role <role>')
    .action(async (t: string, o: { role?: string }) => {
      const q = o.role ? `?role=${seg(o.role)}` : '';
      api.show((await api.call('GET', `${pBase(t)}${q}`)).items as Json[], ['role', 'permission']);
    });
  policies
    .command('add <tenant> <role> <permission>')
    .action(async (t: string, role: string, p: string) => {
      api.show(await api.call('POST', pBase(t), { role, permission: p }), ['role', 'permission']);
    });
  policies
    .command('remove <tenant> <role> <permission>')
    .action(async (t: string, role: string, p: string) => {
      await api.call('DELETE', `${pBase(t)}?role=${seg(role)}&permission=${seg(p)}`);
      api.done(`removed ${p} from role ${role}`, { removed: { role, permission: p } });
    });
  const bindings = rbac.command('bindings').description('subject → role bindings');
  const bBase = (t: string) => `/v1/tenants/${seg(t)}/rbac/bindings`;
  bindings
    .command('list <tenant>')
    .option('--subject <subject>')
    .option('--role <role>')
    .action(async (t: string, o: { subject?: string; role?: string }) => {
      const q = new URLSearchParams();
      if (o.subject) q.set('subject', o.subject);
      if (o.role) q.set('role', o.role);
      const qs = q.size > 0 ? `?${q}` : '';
      api.show((await api.call('GET', `${bBase(t)}${qs}`)).items as Json[], ['subject', 'role']);
    });
  bindings
    .command('add <tenant> <subject> <role>')
    .action(async (t: string, subject: string, role: string) => {
      api.show(await api.call('POST', bBase(t), { subject, role }), ['subject', 'role']);
    });
  bindings
    .command('remove <tenant> <subject> <role>')
    .action(async (t: string, subject: string, role: string) => {
      await api.call('DELETE', `${bBase(t)}?subject=${seg(subject)}&role=${seg(role)}`);
      api.done(`unbound ${subject} from role ${role}`, { unbound: { subject, role } });
    });
}

function issuerCommands(program: Command, ctx: AuthContext): void {
  const { api } = ctx;
  const issuers = program.command('idp-issuers').description("a tenant's upstream OIDC issuers");
  const base = (t: string) => `/v1/tenants/${seg(t)}/idp-issuers`;
  const columns = [
    'issuer',
    'audiences',
    'jwks_url',
    'discovery_url',
    'subject_claim',
    'groups_claim',
  ];
  issuers
    .command('list <tenant>')
    .action(async (t: string) =>
      api.show((await api.call('GET', base(t))).items as Json[], columns),
    );
  issuers
    .command('add <tenant> <issuer>')
    .requiredOption('--audience <aud>', 'accepted audience (repeatable)', collect, [])
    .option('--jwks-url <url>')
    .option('--discovery-url <url>')
    .option('--subject-claim <claim>')
    .option('--groups-claim <claim>')
    .action(async (t: string, issuer: string, o: Json & { audience: string[] }) => {
      const body: Json = { issuer, audiences: o.audience };
      if (o.jwksUrl) body.jwks_url = o.jwksUrl;
      if (o.discoveryUrl) body.discovery_url = o.discoveryUrl;
      if (o.subjectClaim) body.subject_claim = o.subjectClaim;
      if (o.groupsClaim) body.groups_claim = o.groupsClaim;
      api.show(await api.call('POST', base(t), body), columns);
    });
  issuers.command('remove <tenant> <issuer>').action(async (t: string, issuer: string) => {
    await api.call('DELETE', `${base(t)}/${seg(issuer)}`);
    api.done(`removed issuer ${issuer}`, { removed: { issuer } });
  });
}

export function authCommands(program: Command, ctx: AuthContext): void {
  loginCommand(program, ctx);
  tokenCommands(program, ctx);
  rbacCommands(program, ctx);
  issuerCommands(program, ctx);
}
