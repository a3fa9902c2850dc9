// The package entry: the standalone broker (broker.mjs), the secure pair (secure-cluster.mjs)
// and the checks every demo makes of its own claims (checks.mjs).
export * from './broker.mjs';
export * from './checks.mjs';
export * from './secure-cluster.mjs';
