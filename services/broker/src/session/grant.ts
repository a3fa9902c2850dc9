/**
 * One connection's principal and what it may do: the tenant and subject its first stream
 * authenticated as, the permissions of its newest token, and when that token expires. Every
 * stream of the connection reads the same grant, so a `reauth` on any stream (or a later
 * stream's `auth`) replaces the token for all of them. At expiry the grant turns `expired`
 * (requests are refused `unauthenticated` until a reauth) and the session ends what outlives a
 * request (subscriptions, watches).
 *
 * The per-request check reads the request's own scope strings and asks the compiled
 * PermissionSet: no allocation unless it refuses.
 */
import type { PermissionSet } from '@felix/authz';
import type { Message } from '@felix/wire';
import { Refusal } from './refusal.js';
import type { Access } from './access.js';

/** A verified principal: what a token (or dev mode) says. */
export interface Principal {
  readonly tenant: string;
  readonly subject: string;
  /** Null in dev mode: every request is allowed. */
  readonly permissions: PermissionSet | null;
  /** When the token stops being accepted (its `exp` plus the allowed skew); Infinity in dev. */
  readonly expiresAtMs: number;
  /** The token's own `exp` in ms (what `reauth_ok` reports); undefined in dev. */
  readonly expMs: number | undefined;
  /** The bearer token it was verified from: a write forwarded to another broker carries it,
   *  and that broker verifies it again. */
  readonly token: string;
}

/** Counts a refusal by action (felix_broker_requests_forbidden_total). */
export type ForbiddenCounter = (action: string) => void;

export class ConnectionGrant {
  private principal: Principal;
  private timer: NodeJS.Timeout | null = null;
  expired = false;

  constructor(
    principal: Principal,
    private readonly onExpire: () => void,
    private readonly countForbidden: ForbiddenCounter,
  ) {
    this.principal = principal;
    this.arm();
  }

  get tenant(): string {
    return this.principal.tenant;
  }

  get subject(): string {
    return this.principal.subject;
  }

  get expMs(): number | undefined {
    return this.principal.expMs;
  }

  /** The newest token of the connection (a forwarded write carries it to the owner). */
  get token(): string {
    return this.principal.token;
  }

  /** The same tenant and subject: the only principal a connection's later tokens may name. */
  samePrincipal(p: Principal): boolean {
    return p.tenant === this.principal.tenant && p.subject === this.principal.subject;
  }

  /** A fresh token of the same principal: it applies to every stream from now on. */
  replace(p: Principal): void {
    this.principal = p;
    this.expired = false;
    this.arm();
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private arm(): void {
    this.stop();
    const left = this.principal.expiresAtMs - Date.now();
    if (!Number.isFinite(left)) return;
    if (left <= 0) {
      this.expire();
      return;
    }
    this.timer = setTimeout(() => this.expire(), left);
    this.timer.unref();
  }

  private expire(): void {
    this.timer = null;
    this.expired = true;
    this.onExpire();
  }

  /** The refusal of a request after the token expired (not fatal: a reauth may follow). */
  expiredRefusal(): Refusal {
    return new Refusal(
      'unauthenticated',
      'the connection token has expired; reauthenticate or reconnect',
      'token_expired',
    );
  }

  /**
   * Null when the connection may send `req` under `access`; else the refusal (`unauthenticated`
   * after expiry, `forbidden` naming the action and object).
   */
  check(access: Access, req: Message): Refusal | null {
    if (this.expired) return this.expiredRefusal();
    const set = this.principal.permissions;
    if (set === null) return null;
    const m = req as unknown as ScopeFields;
    let ok: boolean;
    if (access.object === 'stream') {
      ok = set.allows(access.action, 'stream', m.tenant_id, m.namespace, m.stream);
      if (!ok && access.orAction !== undefined) {
        ok = set.allows(access.orAction, 'stream', m.tenant_id, m.namespace, m.stream);
      }
    } else if (access.object === 'cache') {
      ok = set.allows(access.action, 'cache', m.tenant_id, m.namespace, m.cache);
      if (!ok && access.orAction !== undefined) {
        ok = set.allows(access.orAction, 'cache', m.tenant_id, m.namespace, m.cache);
      }
    } else {
      ok = set.allows(access.action, 'group', m.tenant_id, m.namespace, m.stream, m.group);
    }
    if (ok) return null;
    return this.forbidden(access.action, objectName(access, m));
  }

  /** The publish check (JSON and binary), from the scope the handler read. */
  checkPublish(tenant: string, namespace: string, stream: string): Refusal | null {
    if (this.expired) return this.expiredRefusal();
    const set = this.principal.permissions;
    if (set === null || set.allows('stream.publish', 'stream', tenant, namespace, stream)) {
      return null;
    }
    return this.forbidden('stream.publish', `stream:${tenant}/${namespace}/${stream}`);
  }

  private forbidden(action: string, object: string): Refusal {
    this.countForbidden(action);
    return new Refusal('forbidden', `${action} on ${object} is not granted`, 'forbidden', {
      detail: { action, object },
    });
  }
}

interface ScopeFields {
  tenant_id: string;
  namespace: string;
  stream: string;
  cache: string;
  group: string;
}

function objectName(access: Access, m: ScopeFields): string {
  if (access.object === 'stream') return `stream:${m.tenant_id}/${m.namespace}/${m.stream}`;
  if (access.object === 'cache') return `cache:${m.tenant_id}/${m.namespace}/${m.cache}`;
  return `group:${m.tenant_id}/${m.namespace}/${m.stream}/${m.group}`;
}
