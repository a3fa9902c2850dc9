/**
 * The permission of every catalog, membership, placement and system route, in one table keyed
 * by `METHOD /url/:pattern` (the table in docs/control-plane.md says the same). Routes added
 * later may declare `config.auth` inline instead; the guard fills `config.auth` from this table
 * when a route is registered and refuses to start when a route has neither.
 */
import type { RouteAuth } from './contract.js';
import { OPEN, bodyField, onCluster, param, perm } from './permissions.js';

const T = param('tenant_id');
const NS = param('namespace');

const namespaceAuth = perm('namespace.manage', 'namespace', T, NS);
const streamAuth = perm('stream.manage', 'stream', T, NS, param('stream'));
const cacheAuth = perm('cache.manage', 'cache', T, NS, param('cache'));
/**
 * Node writes: `node.manage` on the node's own id (a broker's credential) or on `cluster:*`
 * (an operator: `node.manage:cluster:*` covers every `node:ID`).
 */
const ownNode = perm('node.manage', 'node', param('node_id'));

const feeds = ['tenants', 'namespaces', 'streams', 'caches', 'shard-assignments'];

export const ROUTE_AUTH: Readonly<Record<string, RouteAuth>> = {
  'GET /v1/system/live': OPEN,
  'GET /v1/system/ready': OPEN,
  'GET /v1/system/info': OPEN,
  'GET /metrics': OPEN,
  'GET /v1/openapi.json': OPEN,
  'GET /v1/tenants/:tenant_id/.well-known/jwks.json': OPEN,

  ...Object.fromEntries(
    feeds.flatMap((f) => [
      [`GET /v1/${f}/snapshot`, onCluster('node.view')],
      [`GET /v1/${f}/changes`, onCluster('node.view')],
    ]),
  ),

  'GET /v1/tenants': onCluster('tenant.manage'),
  'POST /v1/tenants': onCluster('tenant.manage'),
  'GET /v1/tenants/:tenant_id': onCluster('tenant.manage'),
  'DELETE /v1/tenants/:tenant_id': onCluster('tenant.manage'),

  'GET /v1/tenants/:tenant_id/namespaces': perm('namespace.manage', 'namespace', T, '*'),
  'POST /v1/tenants/:tenant_id/namespaces': perm(
    'namespace.manage',
    'namespace',
    T,
    bodyField('namespace'),
  ),
  'GET /v1/tenants/:tenant_id/namespaces/:namespace': namespaceAuth,
  'DELETE /v1/tenants/:tenant_id/namespaces/:namespace': namespaceAuth,

  'GET /v1/tenants/:tenant_id/namespaces/:namespace/streams': perm(
    'stream.manage',
    'stream',
    T,
    NS,
    '*',
  ),
  'POST /v1/tenants/:tenant_id/namespaces/:namespace/streams': perm(
    'stream.manage',
    'stream',
    T,
    NS,
    bodyField('stream'),
  ),
  'GET /v1/tenants/:tenant_id/namespaces/:namespace/streams/:stream': streamAuth,
  'PATCH /v1/tenants/:tenant_id/namespaces/:namespace/streams/:stream': streamAuth,
  'DELETE /v1/tenants/:tenant_id/namespaces/:namespace/streams/:stream': streamAuth,

  'GET /v1/tenants/:tenant_id/namespaces/:namespace/caches': perm(
    'cache.manage',
    'cache',
    T,
    NS,
    '*',
  ),
  'POST /v1/tenants/:tenant_id/namespaces/:namespace/caches': perm(
    'cache.manage',
    'cache',
    T,
    NS,
    bodyField('cache'),
  ),
  'GET /v1/tenants/:tenant_id/namespaces/:namespace/caches/:cache': cacheAuth,
  'PATCH /v1/tenants/:tenant_id/namespaces/:namespace/caches/:cache': cacheAuth,
  'DELETE /v1/tenants/:tenant_id/namespaces/:namespace/caches/:cache': cacheAuth,

  'POST /v1/nodes': perm('node.manage', 'node', bodyField('node_id')),
  'POST /v1/nodes/:node_id/heartbeat': ownNode,
  'POST /v1/nodes/:node_id/replica-status': ownNode,
  'POST /v1/nodes/:node_id/drain': ownNode,
  'POST /v1/nodes/:node_id/deregister': ownNode,
  'POST /v1/nodes/:node_id/accept-loss': onCluster('node.manage'),
  'DELETE /v1/nodes/:node_id': onCluster('node.manage'),
  'GET /v1/nodes': onCluster('node.view'),
  'GET /v1/nodes/:node_id': onCluster('node.view'),

  'GET /v1/shard-assignments': onCluster('node.view'),
  'GET /v1/placement/plan': onCluster('node.view'),
  'GET /v1/replica-reports': onCluster('node.view'),

  /** A tenant's own key management is managing the tenant. */
  'GET /v1/tenants/:tenant_id/signing-keys': perm('tenant.manage', 'tenant', T),
  'POST /v1/tenants/:tenant_id/signing-keys': perm('tenant.manage', 'tenant', T),
  'POST /v1/tenants/:tenant_id/signing-keys/:kid/activate': perm('tenant.manage', 'tenant', T),
  'DELETE /v1/tenants/:tenant_id/signing-keys/:kid': perm('tenant.manage', 'tenant', T),
};

/** The table's entry for a route (HEAD answers as its GET). */
export function tableAuth(method: string, url: string): RouteAuth | undefined {
  return ROUTE_AUTH[`${method === 'HEAD' ? 'GET' : method} ${url}`];
}
