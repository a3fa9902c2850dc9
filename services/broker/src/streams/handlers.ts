/**
 * Registers the stream requests on the edge's HandlerTable: publishes (JSON and the binary
 * publish frame), `subscribe`, `stream_shards` and `offset_for_time`. What each needs from the
 * broker comes in `StreamDeps`, so this folder never reaches into the catalog or the session.
 */
import type { HandlerTable } from '../session/handler.js';
import type { StreamDeps } from './deps.js';
import { PublishHandlers } from './publish-handlers.js';
import { ReadHandlers } from './read-handlers.js';

export type { StreamDeps };

export function registerStreamHandlers(table: HandlerTable, deps: StreamDeps): void {
  const publishes = new PublishHandlers(deps);
  table.register('publish', publishes.json);
  table.register('publish_batch', publishes.json);
  table.registerFrame('publish_batch', publishes.binary);
  const reads = new ReadHandlers(deps);
  table.register('subscribe', reads.subscribe);
  table.register('stream_shards', reads.streamShards);
  table.register('offset_for_time', reads.offsetForTime);
}
