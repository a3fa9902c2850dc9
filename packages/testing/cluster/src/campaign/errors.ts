import { FelixError } from '@felix/common';

/** A campaign option that cannot be run (an unknown nemesis or workload, a bad duration). */
export class CampaignOptionError extends FelixError {
  readonly code = 'FELIX_TEST_CLUSTER_CAMPAIGN_OPTION';
}

/** The final reads could not be made after the faults healed (the history would be incomplete). */
export class FinalReadError extends FelixError {
  readonly code = 'FELIX_TEST_CLUSTER_FINAL_READ';
}

/** The recorder was used after it was closed, or given a completion for an unknown id. */
export class RecorderStateError extends FelixError {
  readonly code = 'FELIX_TEST_CLUSTER_RECORDER_STATE';
}
