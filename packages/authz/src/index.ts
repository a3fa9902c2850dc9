export { VerifiedTokenCache } from './cache.js';
export {
  AuthzError,
  AuthzLimitError,
  CrossTenantPermissionError,
  DelegationRefusedError,
  InvalidKeyError,
  InvalidRoleNameError,
  KeySetFullError,
  PermissionParseError,
  TokenBadSignatureError,
  TokenClaimsError,
  TokenError,
  TokenExpiredError,
  TokenMalformedError,
  TokenNotYetValidError,
  TokenUnknownKidError,
  TokenWrongAlgorithmError,
  TokenWrongAudienceError,
  TokenWrongIssuerError,
  TokenWrongTenantError,
  UnknownRoleError,
} from './errors.js';
export type { PermissionRefusal, TokenFailure } from './errors.js';
export {
  ACTIONS,
  ACTION_KINDS,
  KIND_DEPTH,
  concretePrefix,
  isIslandKind,
  isName,
  parsePermission,
  printPermission,
  tenantOf,
  tryParsePermission,
} from './grammar.js';
export type {
  Action,
  IslandObjectKind,
  ObjectKind,
  Permission,
  TenantObjectKind,
} from './grammar.js';
export {
  InMemoryKeySet,
  TOKEN_ALGORITHM,
  exportPrivateJwk,
  exportPublicJwk,
  generateSigningKey,
  importPrivateJwk,
  importPublicJwk,
} from './keys.js';
export type { KeyResolver, PublicJwk, SigningKey, SigningKeyPair } from './keys.js';
export {
  BINDINGS_PER_TENANT_MAX,
  KEYS_PER_TENANT_MAX,
  KID_BYTES_MAX,
  NAME_BYTES_MAX,
  PERMISSION_BYTES_MAX,
  POLICIES_PER_ROLE_MAX,
  ROLES_PER_TENANT_MAX,
  SUBJECT_BYTES_MAX,
  TOKEN_BYTES_MAX,
  TOKEN_CLOCK_SKEW_S,
  TOKEN_LIFETIME_S_MAX,
  TOKEN_PERMISSIONS_MAX,
  VERIFIED_TOKEN_CACHE_ENTRIES_MAX,
} from './limits.js';
export { PermissionSet, compilePermissions, expandPermission } from './matcher.js';
export type { GrantEntry } from './matcher.js';
export { TenantRbac } from './rbac.js';
export type { Binding, BindingSubject, Role } from './rbac.js';
export { assertWithinScope, narrowPermissions, withinScope } from './scope.js';
export {
  BROKER_AUDIENCE,
  CONTROL_PLANE_AUDIENCE,
  FELIX_ISSUER,
  signToken,
  verifyToken,
} from './token.js';
export type {
  Audience,
  FelixClaims,
  SignTokenInput,
  VerifiedToken,
  VerifyTokenOptions,
} from './token.js';
