/** The phases of each request line the rules read, named once. */
import type {
  CacheGetLine,
  CachePutLine,
  CounterAddLine,
  GroupPollLine,
  GroupSettleLine,
  NemesisLine,
  PublishLine,
  SubscribeLine,
} from '../history.js';

type Phase<L, P> = Extract<L, { phase: P }>;

export type PublishInvoke = Phase<PublishLine, 'invoke'>;
export type PublishOk = Phase<PublishLine, 'ok'>;
export type SubscribeInvoke = Phase<SubscribeLine, 'invoke'>;
export type CachePutInvoke = Phase<CachePutLine, 'invoke'>;
export type CacheGetInvoke = Phase<CacheGetLine, 'invoke'>;
export type CacheGetOk = Phase<CacheGetLine, 'ok'>;
export type CounterAddInvoke = Phase<CounterAddLine, 'invoke'>;
export type GroupPollInvoke = Phase<GroupPollLine, 'invoke'>;
export type GroupPollOk = Phase<GroupPollLine, 'ok'>;
export type GroupSettleInvoke = Phase<GroupSettleLine, 'invoke'>;
export type NemesisInvoke = Phase<NemesisLine, 'invoke'>;

/** Faults that take a broker away (its clients see it gone until it is back). */
export const OUTAGE_FAULTS: ReadonlySet<string> = new Set(['kill', 'stop', 'restart', 'pause']);
/** Faults after which a group may hand a claimed record out again. */
export const CLAIM_LOSS_FAULTS: ReadonlySet<string> = new Set([
  'kill',
  'stop',
  'restart',
  'pause',
  'partition',
]);
/** Faults after which a periodic cursor may have forgotten acks. */
export const CURSOR_LOSS_FAULTS: ReadonlySet<string> = new Set(['kill', 'restart']);
/**
 * Faults after which any cursor forgets acks above its first unfinished record: the cursor is
 * one offset (wire-storage §3.7), so only the contiguous acked run below it is durable.
 */
export const ABOVE_CURSOR_LOSS_FAULTS: ReadonlySet<string> = new Set(['kill', 'stop', 'restart']);
/**
 * Faults that may move a replicated shard's leader: the control plane gives the shard away when
 * its leader is silent (a kill, a pause) or cut from the control plane. A partition between two
 * brokers moves nothing (the control plane still hears both), nor does a slow fsync.
 */
export function mayMoveLeader(fault: NemesisInvoke): boolean {
  if (fault.fault === 'partition') return fault.target.includes('controlplane');
  return ['kill', 'stop', 'restart', 'pause'].includes(fault.fault);
}

/** What heals each fault (the runner heals a fault before the next one starts). */
export const HEALED_BY: Readonly<Record<string, readonly string[]>> = {
  kill: ['start', 'restart'],
  stop: ['start', 'restart'],
  pause: ['resume'],
  partition: ['heal'],
};
