/**
 * A stream's first frame: the `auth` request, its token verified (auth/authenticator.ts: the
 * tenant's key, audience, issuer, expiry, `tid` equal to the tenant the stream names) and
 * negotiated into what both sides use (frame layouts, features, the publish window), with the
 * answer to write. Which principal the connection already has is the session's business.
 */
import type { Message } from '@felix/wire';
import type { Principal } from './grant.js';
import { IDENT_BYTES_MAX, TOKEN_BYTES_MAX } from '../limits.js';
import { type InboundFrame, readMessage } from './codec.js';
import type { SessionContext } from './context.js';
import { type Negotiated, SERVER_FEATURES, authAnswer, negotiateAuth } from './negotiation.js';
import { Refusal } from './refusal.js';

export type AuthOutcome =
  | { ok: true; negotiated: Negotiated; answer: Message; principal: Principal }
  | {
      ok: false;
      refusal: Refusal;
      /** The features the `auth` offered: its refusal carries a code when they include codes. */
      offered?: Pick<Negotiated, 'features'>;
    };

const refused = (message: string, reason: string): AuthOutcome => ({
  ok: false,
  refusal: new Refusal('unauthenticated', message, reason, { fatalToStream: true }),
});

export async function authenticate(ctx: SessionContext, frame: InboundFrame): Promise<AuthOutcome> {
  let msg: Message;
  try {
    if (frame.flags !== 0) throw new Error('the first frame on a stream must be a JSON auth');
    msg = readMessage(frame.payload);
  } catch (err) {
    return refused((err as Error).message, 'preauth_frame');
  }
  if (msg.type !== 'auth') return refused(`expected auth, got ${msg.type}`, 'preauth_message');
  // The auth's own features say how its refusal is written (with a code when it offered codes).
  const offered = { features: msg.client_features ?? 0 };
  const bad = badAuthField(msg);
  if (bad !== null) {
    const refusal = new Refusal('unauthenticated', bad, 'auth_fields', { fatalToStream: true });
    return { ok: false, refusal, offered };
  }
  if (ctx.draining()) {
    return {
      ok: false,
      refusal: new Refusal('draining', 'broker is shutting down', 'draining', {
        fatalToStream: true,
      }),
      offered,
    };
  }
  let principal: Principal;
  try {
    principal = await ctx.authenticator.verify(msg.token, msg.tenant_id);
  } catch (err) {
    return { ok: false, refusal: err as Refusal, offered };
  }
  const negotiated = negotiateAuth(
    msg.tenant_id,
    msg.client_flags,
    msg.client_features,
    SERVER_FEATURES | ctx.handlers.features,
    msg.client_features_hi,
    ctx.handlers.featuresHi,
  );
  const answer = authAnswer(negotiated, Math.max(1, ctx.config.broker.publish_window));
  return { ok: true, negotiated, answer, principal };
}

/** Which field of an `auth` is out of bounds, said so a client can tell; null when none is. */
function badAuthField(msg: Extract<Message, { type: 'auth' }>): string | null {
  if (msg.tenant_id === '') return 'tenant_id is empty';
  const tenantBytes = Buffer.byteLength(msg.tenant_id);
  if (tenantBytes > IDENT_BYTES_MAX)
    return `tenant_id is ${tenantBytes} bytes, at most ${IDENT_BYTES_MAX}`;
  if (msg.token.length > TOKEN_BYTES_MAX)
    return `token is ${msg.token.length} characters, at most ${TOKEN_BYTES_MAX}`;
  return null;
}
