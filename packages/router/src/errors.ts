/** Errors raised by @felix/router: placement input that breaks its contract. */
import { FelixError } from '@felix/common';

/** Base of every router failure. */
export abstract class RouterError extends FelixError {}

/** A replication factor outside 1..REPLICATION_FACTOR_MAX was asked for. */
export class InvalidReplicationFactorError extends RouterError {
  readonly code = 'FELIX_ROUTER_INVALID_REPLICATION_FACTOR';
  constructor(readonly replicationFactor: number) {
    super(`replication factor ${replicationFactor} is outside 1..16`);
  }
}

/** The node list passed to a placement call exceeds NODES_MAX. */
export class TooManyNodesError extends RouterError {
  readonly code = 'FELIX_ROUTER_TOO_MANY_NODES';
  constructor(readonly count: number) {
    super(`placement over ${count} nodes exceeds the bound`);
  }
}
