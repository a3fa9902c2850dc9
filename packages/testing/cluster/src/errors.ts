import { FelixError } from '@felix/common';

/** The cluster spec (or FELIX_TEST_TIMEOUT_SCALE) asks for something the harness cannot do. */
export class BadClusterSpecError extends FelixError {
  readonly code = 'FELIX_TESTING_CLUSTER_BAD_SPEC';
}

/** A NodeRef names no broker of the cluster. */
export class UnknownNodeError extends FelixError {
  readonly code = 'FELIX_TESTING_CLUSTER_UNKNOWN_NODE';
}

/** A fault asked of a broker in a state it cannot take (start a running one, pause a stopped). */
export class NodeStateError extends FelixError {
  readonly code = 'FELIX_TESTING_CLUSTER_NODE_STATE';
}

/** A process (control plane or broker) exited or stayed silent before it listened. */
export class ProcessStartError extends FelixError {
  readonly code = 'FELIX_TESTING_CLUSTER_PROCESS_START';
}

/** A fault did not take effect within its deadline. */
export class FaultTimeoutError extends FelixError {
  readonly code = 'FELIX_TESTING_CLUSTER_FAULT_TIMEOUT';
}

/** Not every shard was served by a running broker within the deadline. */
export class NotServedError extends FelixError {
  readonly code = 'FELIX_TESTING_CLUSTER_NOT_SERVED';
}

/** A control-plane call (bootstrap, catalog, assignments) answered an error. */
export class ControlPlaneCallError extends FelixError {
  readonly code = 'FELIX_TESTING_CLUSTER_CONTROLPLANE_CALL';
}

/** The cluster's CA or a broker certificate could not be made (openssl missing or failing). */
export class PkiError extends FelixError {
  readonly code = 'FELIX_TESTING_CLUSTER_PKI';
}

/** A request the test sent as a peer broker got no answer (the listener closed or stayed silent). */
export class PeerCallError extends FelixError {
  readonly code = 'FELIX_TESTING_CLUSTER_PEER_CALL';
}

/** The cluster was shut down; no fault or connection can be asked of it any more. */
export class ClusterClosedError extends FelixError {
  readonly code = 'FELIX_TESTING_CLUSTER_CLOSED';
}

/** A campaign option that cannot be run (an unknown nemesis or workload, a bad duration). */
export class CampaignOptionError extends FelixError {
  readonly code = 'FELIX_TESTING_CLUSTER_CAMPAIGN_OPTION';
}

/** The final reads could not be made after the faults healed (the history would be incomplete). */
export class FinalReadError extends FelixError {
  readonly code = 'FELIX_TESTING_CLUSTER_FINAL_READ';
}

/** The recorder was used after it was closed, or given a completion for an unknown id. */
export class RecorderStateError extends FelixError {
  readonly code = 'FELIX_TESTING_CLUSTER_RECORDER_STATE';
}
