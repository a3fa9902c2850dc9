/**
 * Group administration: dead-letter listing, discard and redrive, `group_seek`,
 * `group_describe` and `group_delete`. Each durable change is made before its answer.
 */
import type { Message } from '@felix/wire';
import { GROUP_DEAD_LETTER_LIST_MAX, GROUP_DELETE_DEAD_LETTERS_PER_WRITE_MAX } from '../limits.js';
import type { GroupCore } from './core.js';
import { type Msg, type Scope, bad, unknownGroup } from './requests.js';

export async function listDeadLetters(
  core: GroupCore,
  scope: Scope,
  msg: Msg<'group_dead_letters'>,
): Promise<Message> {
  // Refused before the group is looked up: a bad page is the caller's error whatever the group.
  const limit = msg.limit ?? GROUP_DEAD_LETTER_LIST_MAX;
  if (limit === 0 || limit > GROUP_DEAD_LETTER_LIST_MAX) {
    throw bad(`limit must be 1..${GROUP_DEAD_LETTER_LIST_MAX}`, 'bad_dead_letter_page');
  }
  // A group that never existed (or was deleted) is not_found, as its description is.
  await core.registry.existing(scope);
  // The lowest `limit` entries above `after` still dead, not the dead among the lowest entries:
  // redriven entries stay stored until their record is finished, and a page of them used to
  // answer an empty list while dead letters remained above it. One more is looked for, to say
  // whether a next page has anything (the walk stops there).
  const offsets: number[] = [];
  let more = false;
  await core.registry.deadLetters.each(
    scope.id,
    scope.group,
    (d) => {
      if (d.state !== 'dead') return true;
      if (offsets.length === limit) {
        more = true;
        return false;
      }
      offsets.push(d.offset);
      return true;
    },
    msg.after ?? -1,
  );
  return { type: 'group_dead_letter_list', offsets, more, request_id: msg.request_id };
}

export async function discard(
  core: GroupCore,
  scope: Scope,
  msg: Msg<'group_discard'>,
): Promise<Message> {
  if (!(await core.registry.deadLetters.discard(scope.id, scope.group, msg.offset))) {
    throw bad(`no dead letter at offset ${msg.offset}`, 'no_dead_letter');
  }
  return { type: 'cache_ok', request_id: msg.request_id };
}

export async function redrive(
  core: GroupCore,
  scope: Scope,
  msg: Msg<'group_redrive'>,
): Promise<Message> {
  const st = await core.registry.state(scope);
  // Durable first: a redrive answered is a redrive that survives a restart.
  if (!(await core.registry.deadLetters.redrive(scope.id, scope.group, msg.offset))) {
    throw bad(`no dead letter at offset ${msg.offset}`, 'no_dead_letter');
  }
  st.done.delete(msg.offset);
  st.redriven.add(msg.offset);
  st.owed.set(msg.offset, 0);
  core.waiters.wake(scope.source);
  return { type: 'cache_ok', request_id: msg.request_id };
}

export async function seek(
  core: GroupCore,
  scope: Scope,
  msg: Msg<'group_seek'>,
): Promise<Message> {
  const tail = scope.source.appliedNext;
  const st = await core.registry.state(scope);
  if (msg.if_new && st.committed !== undefined) {
    return {
      type: 'group_position',
      offset: st.position,
      moved: false,
      request_id: msg.request_id,
    };
  }
  const start = msg.start;
  const base = scope.source.logBaseOffset;
  const target = start === 'earliest' ? base : start === 'latest' ? tail : start.offset;
  if (target > tail) throw bad(`offset ${target} is past the tail ${tail}`, 'offset_past_tail');
  const at = Math.max(target, scope.source.logBaseOffset);
  await core.registry.quiesce(st);
  // Reset in memory in the same turn as the write is queued: a settle of the old position
  // cannot move it during the write any more (before, its cursor write was queued behind the
  // seek's and undid it on disk), and settles of the new position wait for the write.
  st.reset(at);
  const write = core.registry.cursors.seek(scope.id, scope.group, at).then(() => {
    st.committed = at;
  });
  st.commitRun = write;
  try {
    await write;
  } catch (err) {
    // Not written: the group is loaded again from its durable cursor by the next request.
    core.registry.forget(scope);
    throw err;
  } finally {
    if (st.commitRun === write) st.commitRun = undefined;
  }
  core.waiters.wake(scope.source);
  return { type: 'group_position', offset: at, moved: true, request_id: msg.request_id };
}

export async function describe(
  core: GroupCore,
  scope: Scope,
  msg: Msg<'group_describe'>,
): Promise<Message> {
  const { registry } = core;
  const st = registry.held(scope);
  const committed = st?.committed ?? (await registry.cursors.position(scope.id, scope.group));
  st?.expire(Date.now());
  // Every dead letter counts, not only one list page's (1,000).
  let dead = 0;
  await registry.deadLetters.each(scope.id, scope.group, (d) => {
    if (d.state === 'dead') dead++;
  });
  if (st === undefined && committed === undefined && dead === 0) throw unknownGroup(scope.group);
  return {
    type: 'group_info',
    ...(committed !== undefined ? { committed } : {}),
    tail: scope.source.appliedNext,
    in_flight: st?.claims.size ?? 0,
    owed: st?.owed.size ?? 0,
    dead_letters: dead,
    cursor_fsync: registry.cursorFsync(scope),
    request_id: msg.request_id,
  };
}

export async function remove(
  core: GroupCore,
  scope: Scope,
  msg: Msg<'group_delete'>,
): Promise<Message> {
  const existed = await core.registry.removal(scope, () => removeGroup(core, scope));
  core.waiters.wake(scope.source);
  return { type: 'group_deleted', existed, request_id: msg.request_id };
}

/** Forgets the group and removes its cursor and dead letters; answers whether it existed. */
async function removeGroup(core: GroupCore, scope: Scope): Promise<boolean> {
  const { registry } = core;
  // A periodic cursor write in flight lands first, so it cannot bring the cursor back.
  const held = registry.held(scope);
  if (held !== undefined) await registry.quiesce(held);
  const inMemory = registry.forget(scope);
  const committed = await registry.cursors.position(scope.id, scope.group);
  let existed = inMemory || committed !== undefined;
  if (committed !== undefined) await registry.cursors.delete(scope.id, scope.group);
  // A page at a time, each page one write (before, one append and one sync per dead letter: a
  // group of 10,000 kept its caller waiting for 10,000 syncs). Interrupted, the delete leaves the
  // rest listed and the group existing, and the client's retry goes on from there.
  const per = GROUP_DELETE_DEAD_LETTERS_PER_WRITE_MAX;
  while ((await registry.deadLetters.removeLowest(scope.id, scope.group, per)) > 0) existed = true;
  return existed;
}
