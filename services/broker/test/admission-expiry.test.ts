// Goal: once a connection's token expired, every request but the ones that bring a fresh token
// is refused `unauthenticated` (docs/security.md, "Tokens end"), the ones naming nothing
// (`topology`, `shard_owners`: where brokers and shard leaders are) too: they were admitted
// without a look at the token, found by a security review.
// Method: admission over a stand-in grant and handler entries without an access row.
import { describe, expect, it } from 'vitest';
import { admit } from '../src/session/admission.js';
import type { SessionContext } from '../src/session/context.js';
import type { HandlerEntry, RequestContext } from '../src/session/handler.js';
import { Refusal } from '../src/session/refusal.js';

function rcWith(expired: boolean): RequestContext {
  const grant = {
    expired,
    expiredRefusal: () =>
      new Refusal('unauthenticated', 'the connection token has expired', 'token_expired'),
  };
  return { grant } as unknown as RequestContext;
}

const ctx = {} as SessionContext;
const open = { access: null, handler: { shardLocation: 'handler' } } as unknown as HandlerEntry;

describe('admission after expiry', () => {
  it('a_request_naming_nothing_is_refused_once_the_token_expired_but_a_reauth_is_admitted', () => {
    for (const type of ['topology', 'shard_owners']) {
      const msg = { type } as never;
      expect(admit(ctx, rcWith(false), open, msg)).toBeNull();
      expect(admit(ctx, rcWith(true), open, msg)).toMatchObject({ wireCode: 'unauthenticated' });
    }
    expect(admit(ctx, rcWith(true), open, { type: 'reauth' } as never)).toBeNull();
  });
});
