// The package entry: the standalone broker (broker.mjs) and the secure pair (secure-cluster.mjs).
export * from './broker.mjs';
export * from './secure-cluster.mjs';
