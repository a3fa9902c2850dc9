/** What every route module receives. */
import type { LivenessConfig } from '../config.js';
import type { PlacementRunner } from '../cluster/placement-runner.js';
import type { FeedHub } from '../feeds/hub.js';
import type { Metrics } from '../metrics.js';
import type { ControlStore, PlacementView } from '../store/store.js';
import type { Clock } from '../store/types.js';

export interface RouteContext {
  store: ControlStore;
  hub: FeedHub;
  placement: PlacementRunner;
  metrics: Metrics;
  clock: Clock;
  liveness: LivenessConfig;
  changesLimit: number;
  regionId: string;
  version: string;
  /** The nodes as placement sees them now (liveness applied). */
  placementView: PlacementView;
}
