/**
 * Broker operating errors: what broker code throws and logs. A request the broker declines is a
 * `Refusal` (session/refusal.ts, a BrokerError too), answered to the client with a wire error
 * code from @felix/wire's table.
 */
import { FelixError, type FelixErrorOptions } from '@felix/common';

export abstract class BrokerError extends FelixError {}

/** A config key (YAML path or FELIX_BROKER_* variable) that the registry does not know. */
export class ConfigUnknownKeyError extends BrokerError {
  readonly code = 'FELIX_BROKER_CONFIG_UNKNOWN_KEY';
  constructor(
    readonly key: string,
    readonly source: string,
    /** A known name the caller probably meant, said in the message. */
    readonly suggestion?: string,
  ) {
    super(
      `unknown config key ${key} (from ${source})${suggestion === undefined ? '' : `: did you mean ${suggestion}?`}`,
    );
  }
}

/** A config value that does not parse or is out of range. */
export class ConfigInvalidValueError extends BrokerError {
  readonly code = 'FELIX_BROKER_CONFIG_INVALID_VALUE';
  constructor(
    readonly key: string,
    readonly source: string,
    reason: string,
  ) {
    super(`invalid value for ${key} (from ${source}): ${reason}`);
  }
}

/** Values that are each valid but not together (e.g. a durable stream without a data dir). */
export class ConfigInvalidCombinationError extends BrokerError {
  readonly code = 'FELIX_BROKER_CONFIG_INVALID_COMBINATION';
  constructor(
    readonly keys: string[],
    reason: string,
  ) {
    super(`invalid config combination (${keys.join(', ')}): ${reason}`);
  }
}

/** The YAML config file could not be read or parsed. */
export class ConfigFileError extends BrokerError {
  readonly code = 'FELIX_BROKER_CONFIG_FILE';
  constructor(
    readonly path: string,
    reason: string,
    options?: FelixErrorOptions,
  ) {
    super(`config file ${path}: ${reason}`, options);
  }
}

/** A command-line flag felix-broker does not know. */
export class UnknownFlagError extends BrokerError {
  readonly code = 'FELIX_BROKER_UNKNOWN_FLAG';
  constructor(readonly flag: string) {
    super(`unknown flag ${flag} (known: --print-config, --help)`);
  }
}

/** A listener could not be started. */
export class ListenError extends BrokerError {
  readonly code = 'FELIX_BROKER_LISTEN';
  constructor(what: string, options?: FelixErrorOptions) {
    super(`could not listen on ${what}`, options);
  }
}

/** A shard's log failed (storage error); publishes to it are refused until restart. */
export class ShardFailedError extends BrokerError {
  readonly code = 'FELIX_BROKER_SHARD_FAILED';
  constructor(shard: string, options?: FelixErrorOptions) {
    super(`shard ${shard} failed`, { retry: 'unknown_outcome', ...options });
  }
}

/** A call cut by the test partition file (docs/reliability.md): failed without being sent. */
export class PartitionedError extends BrokerError {
  readonly code = 'FELIX_BROKER_TEST_PARTITIONED';
  constructor(readonly target: string) {
    super(`${target} is unreachable: cut by the test partition file`, { retry: 'retry' });
  }
}

/** The broker is draining and takes no new work. */
export class DrainingError extends BrokerError {
  readonly code = 'FELIX_BROKER_DRAINING';
  constructor() {
    super('broker is draining', { retry: 'retry' });
  }
}

/** A control-plane call failed without an answer (network, timeout) or with a 5xx; retried. */
export class ControlPlaneUnavailableError extends BrokerError {
  readonly code = 'FELIX_BROKER_CONTROLPLANE_UNAVAILABLE';
  constructor(
    readonly what: string,
    reason: string,
    options?: FelixErrorOptions,
  ) {
    super(`control plane ${what}: ${reason}`, { retry: 'retry', ...options });
  }
}

/** The control plane answered a 4xx; `apiCode` is its error code (e.g. a stale incarnation). */
export class ControlPlaneRefusedError extends BrokerError {
  readonly code = 'FELIX_BROKER_CONTROLPLANE_REFUSED';
  constructor(
    readonly what: string,
    readonly status: number,
    readonly apiCode: string,
    message: string,
  ) {
    super(`control plane ${what} refused (${status} ${apiCode}): ${message}`);
  }
}

/** A control-plane answer did not have the documented shape. */
export class ControlPlaneAnswerError extends BrokerError {
  readonly code = 'FELIX_BROKER_CONTROLPLANE_ANSWER';
  constructor(
    readonly what: string,
    reason: string,
  ) {
    super(`control plane ${what}: unexpected answer: ${reason}`, { retry: 'retry' });
  }
}

/** The auth settings cannot work together (e.g. `tokens` with no key source). */
export class AuthConfigError extends BrokerError {
  readonly code = 'FELIX_BROKER_AUTH_CONFIG';
}

/** `auth.keys_file` could not be read or is not a `{tenants: {t: {keys: [...]}}}` document. */
export class KeysFileError extends BrokerError {
  readonly code = 'FELIX_BROKER_KEYS_FILE';
  constructor(
    readonly path: string,
    reason: string,
    options?: FelixErrorOptions,
  ) {
    super(`auth.keys_file ${path}: ${reason}`, options);
  }
}

/** `cluster.node_token_file` is missing, unreadable, too large or empty when the broker starts. */
export class NodeTokenFileError extends BrokerError {
  readonly code = 'FELIX_BROKER_NODE_TOKEN_FILE';
  constructor(
    readonly path: string,
    reason: string,
    options?: FelixErrorOptions,
  ) {
    super(`cluster.node_token_file ${path}: ${reason}`, options);
  }
}

/** A name-incarnation file (cluster/name-incarnations.ts) that does not decode. */
export class NameMarkerError extends BrokerError {
  readonly code = 'FELIX_BROKER_NAME_MARKER';
  constructor(reason: string, options?: FelixErrorOptions) {
    super(`name incarnation file: ${reason}`, options);
  }
}

/** A standalone broker's shard count file (catalog/yaml-shard-counts.ts) that does not decode. */
export class ShardCountMarkerError extends BrokerError {
  readonly code = 'FELIX_BROKER_SHARD_COUNT_MARKER';
  constructor(reason: string, options?: FelixErrorOptions) {
    super(`shard count file: ${reason}`, options);
  }
}

/** A standalone broker's YAML names another shard count than its data was written with. */
export class ShardCountChangedError extends BrokerError {
  readonly code = 'FELIX_BROKER_SHARD_COUNT_CHANGED';
  constructor(what: string, was: number, now: number, options?: FelixErrorOptions) {
    super(
      `${what} was written with ${was} shards and the configuration now names ${now}: a key goes to shardForKey(key, shards), so its held keys would read as absent. Shard counts are fixed at creation: put ${was} back, or move its data dir aside to start it over`,
      options,
    );
  }
}

/** A shard lineage file (cluster/lineage-markers.ts) that does not decode. */
export class LineageMarkerError extends BrokerError {
  readonly code = 'FELIX_BROKER_LINEAGE_MARKER';
  constructor(reason: string, options?: FelixErrorOptions) {
    super(`shard lineage file: ${reason}`, options);
  }
}

/** A tenant's JWKS could not be fetched or read (remembered for JWKS_FAILURE_MEMORY_MS). */
export class JwksFetchError extends BrokerError {
  readonly code = 'FELIX_BROKER_JWKS_FETCH';
  constructor(
    readonly tenant: string,
    reason: string,
    options?: FelixErrorOptions,
  ) {
    super(`JWKS of tenant ${tenant}: ${reason}`, { retry: 'retry', ...options });
  }
}

/** A peer broker that is not who it says: its Hello names another node than its certificate
 *  (or the listener dialled), or it answered the Hello with something else. */
export class PeerIdentityError extends BrokerError {
  readonly code = 'FELIX_BROKER_PEER_IDENTITY';
  constructor(
    readonly peer: string,
    detail: string,
  ) {
    super(`peer ${peer} refused: ${detail}`);
  }
}

/** A request to a peer broker got no answer in time, or its link failed under it. */
export class PeerRequestError extends BrokerError {
  readonly code = 'FELIX_BROKER_PEER_REQUEST';
  constructor(peer: string, detail: string, options?: FelixErrorOptions) {
    super(`request to peer ${peer} failed: ${detail}`, options);
  }
}

/** A peer broker could not be reached: nothing was sent (no address yet, the dial or its Hello
 *  failed, or the test partition cuts it), so the request was certainly not done. */
export class PeerUnreachableError extends BrokerError {
  readonly code = 'FELIX_BROKER_PEER_UNREACHABLE';
  constructor(
    readonly peer: string,
    detail: string,
    options?: FelixErrorOptions,
  ) {
    super(`peer ${peer} unreachable: ${detail}`, options);
  }
}

/** A forwarded write the owner will not do, with the internal error code it answers. */
export class ForwardRefusedError extends BrokerError {
  readonly code = 'FELIX_BROKER_FORWARD_REFUSED';
  constructor(
    readonly internalCode: number,
    detail: string,
  ) {
    super(detail);
  }
}

/** A `quorum` publish was not held by a majority within `broker.publish_quorum_timeout_ms`: its
 *  outcome is unknown (it stays in the log and commits if the followers catch up). */
export class QuorumTimeoutError extends BrokerError {
  readonly code = 'FELIX_BROKER_QUORUM_TIMEOUT';
  constructor(
    readonly first: number,
    readonly commitOffset: number,
    readonly timeoutMs: number,
  ) {
    super(
      `records from offset ${first} were not held by a majority within ${timeoutMs} ms ` +
        `(commit offset ${commitOffset}); the outcome is unknown`,
      { retry: 'unknown_outcome' },
    );
  }
}

/** A `quorum` publish waited for the mark on a shard this broker stopped serving. */
export class QuorumAbandonedError extends BrokerError {
  readonly code = 'FELIX_BROKER_QUORUM_ABANDONED';
  constructor(shard: string) {
    super(`shard ${shard} stopped being served before a majority held the records`, {
      retry: 'unknown_outcome',
    });
  }
}
