/** What every route module receives. */
import type { TenantKeyCache } from '../auth/keys.js';
import type { TokenSigner } from '../auth/signer.js';
import type { Clock } from '../clock.js';
import type { LivenessConfig } from '../config.js';
import type { PlacementRunner } from '../cluster/placement-runner.js';
import type { FeedHub } from '../feeds/hub.js';
import type { Metrics } from '../metrics.js';
import type { PlacementView } from '../store/assignments.js';
import type { ControlStore } from '../store/store.js';

export interface RouteContext {
  store: ControlStore;
  hub: FeedHub;
  placement: PlacementRunner;
  /** Tells the down sweep of a heartbeat this instance accepted (its stamp, written). */
  heard: (nodeId: string, stamp: number) => void;
  metrics: Metrics;
  clock: Clock;
  liveness: LivenessConfig;
  changesLimit: number;
  regionId: string;
  version: string;
  /** The nodes as placement sees them now (liveness applied). */
  placementView: PlacementView;
  /** The tenants' public keys as the guard sees them (forget a tenant after changing its keys). */
  keys: TenantKeyCache;
  /** Signs Felix tokens with a tenant's active key. */
  signer: TokenSigner;
}
