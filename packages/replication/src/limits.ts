/** Bounds of log shipping. */

/**
 * Records one replication batch carries. A batch is one frame and one follower append; a
 * follower answers each before the next is sent, so this bounds what a lost answer resends.
 */
export const REPLICATE_BATCH_RECORDS_MAX = 1024;

/** Payload bytes one replication batch carries (a batch has at least one record). */
export const REPLICATE_BATCH_BYTES_MAX = 1024 * 1024;

/** Largest replica set a commit mark is computed over (the router's bound). */
export const REPLICA_SET_SIZE_MAX = 16;
