/** Bounds of the pure placement functions. */

/**
 * Largest replica set placement will build. Quorum over more than 16 copies buys nothing a
 * cluster of tens of brokers needs, and it bounds the per-shard work in a pass.
 */
export const REPLICATION_FACTOR_MAX = 16;

/**
 * Largest node list one placement call scores. Every shard scores every node, so the pass cost
 * is shards × nodes; 4096 brokers is far past the tens the design targets.
 */
export const NODES_MAX = 4096;
