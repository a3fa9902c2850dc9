/**
 * Registers `counter_add` and `counter_get` on the edge's HandlerTable. Counters live beside the
 * caches (CacheService, `<data_dir>/counters/`, durable storage only) and answer through the same
 * ordered pipe (caches/answers.ts). Their feature bit is offered with the durable caches'. In a
 * cluster, an add to a shard another broker leads is forwarded there (a get is redirected).
 */
import type { Message } from '@felix/wire';
import type { ProjectionAnswers } from '../caches/answers.js';
import { type CacheService, storageRefusal } from '../caches/cache-service.js';
import { forwardCacheWrite } from '../caches/forward.js';
import { StreamWrites, writeKey } from '../caches/stream-writes.js';
import type { ForwardingSlot } from '../session/context.js';
import type { Handler, HandlerTable, RequestContext } from '../session/handler.js';
import type { Negotiated } from '../session/negotiation.js';
import { checkTenant } from '../session/refusal.js';

type Msg<T extends Message['type']> = Extract<Message, { type: T }>;
type CounterMsg = Msg<'counter_add'> | Msg<'counter_get'>;

export function registerCounterHandlers(
  table: HandlerTable,
  caches: CacheService,
  answers: ProjectionAnswers,
  forwarding: ForwardingSlot,
): void {
  // Read-your-writes on a stream, as for cache gets: a get waits for the stream's adds of its
  // key that are not answered yet (an add is applied only once durable).
  const writes = new StreamWrites();
  const answer = (msg: CounterMsg, rc: RequestContext): Promise<Message> => {
    const before = writes.before(rc.answers, msg);
    return before === undefined
      ? counterOp(caches, rc.auth, msg)
      : before.then(() => counterOp(caches, rc.auth, msg));
  };
  const get: Handler<CounterMsg> = {
    onPublishOnly: 'unsupported',
    shardLocation: 'message',
    handle: (msg, rc) => answers.queue(rc, msg, answer),
  };
  const add: Handler<Msg<'counter_add'>> = {
    ...get,
    handle: (msg, rc) => {
      const done = writes.begin(rc.answers, writeKey(msg));
      const outcome = answers.queue(rc, msg, (m, c) => {
        const a = counterOp(caches, c.auth, m);
        a.then(done, done);
        return a;
      });
      // An add refused before its answer was made owes no wait.
      if (outcome instanceof Promise) outcome.catch(done);
      return outcome;
    },
    forward: forwardCacheWrite(forwarding, answers),
  };
  table.register('counter_add', add);
  table.register('counter_get', get);
}

export async function counterOp(
  svc: CacheService,
  auth: Negotiated,
  msg: Msg<'counter_add'> | Msg<'counter_get'>,
): Promise<Message> {
  checkTenant(auth, msg.tenant_id);
  const cfg = svc.lookup(msg.tenant_id, msg.namespace, msg.cache);
  const shard = svc.shardOf(cfg, msg.key);
  const counters = await svc.counters(cfg, shard);
  let value: bigint | undefined;
  try {
    value =
      msg.type === 'counter_add'
        ? await svc.acked('counters', cfg, shard, () => counters.add(msg.key, msg.delta))
        : await counters.get(msg.key);
  } catch (err) {
    throw storageRefusal(msg.type === 'counter_add' ? 'counter add' : 'counter get', err);
  }
  return {
    type: 'counter_value',
    ...(value !== undefined ? { value } : {}),
    request_id: msg.request_id,
  };
}
