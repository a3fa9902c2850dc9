/**
 * How felixctl's data verbs fail: one line naming the error's stable code (the client's
 * `FELIX_CLIENT_*`, with the broker's code when the broker refused) and a hint, and an exit code
 * by kind. Errors are compared by `code`, never by class: the client is a separate bundle.
 */

/** Exit codes of felixctl (docs/felixctl.md). */
export const EXIT = {
  ok: 0,
  /** The broker or the control plane refused (not found, forbidden, invalid, ...). */
  refused: 1,
  /** A bad argument or option, or missing connection settings. */
  usage: 2,
  /** No broker or control plane could be reached, or an answer did not come in time. */
  unavailable: 3,
  /** `cache get` / `counter get`: the key holds nothing. */
  absent: 4,
} as const;

/** A mistake in how felixctl was called; `hint` says what to type instead. */
export class UsageError extends Error {
  readonly code = 'FELIX_CTL_USAGE';
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** The control plane could not be reached (refused, unresolvable, a "bad port", no answer in
 *  time): the reason is the transport's, not fetch's bare "fetch failed". */
export class UnreachableError extends Error {
  readonly code = 'FELIX_CTL_UNREACHABLE';
  readonly hint: string;
  constructor(url: string, reason: string, options?: ErrorOptions) {
    super(`cannot reach the control plane at ${url}: ${reason}`, options);
    this.hint = /certificate|self[- ]signed|CERT_/i.test(reason)
      ? 'its TLS certificate is not trusted here: give Node the CA that signed it (NODE_EXTRA_CA_CERTS=ca.pem)'
      : 'check --url (FELIX_CONTROLPLANE_URL) and that the control plane runs';
  }
}

/** `sub --until-end`: no shard's subscribe was answered within --timeout, and the client
 *  retried no refusal to name instead. */
export class SubscribeWaitError extends Error {
  readonly code = 'FELIX_CTL_SUBSCRIBE_TIMEOUT';
}

/** A key that holds no value: not a failure, but scripts need to tell it apart. */
export class AbsentError extends Error {
  readonly code = 'FELIX_CTL_ABSENT';
}

const UNAVAILABLE = new Set([
  'FELIX_CTL_UNREACHABLE',
  'FELIX_CTL_SUBSCRIBE_TIMEOUT',
  'FELIX_CLIENT_CONNECT',
  'FELIX_CLIENT_TIMEOUT',
  'FELIX_CLIENT_CONNECTION_LOST',
  'FELIX_CLIENT_OUTCOME_UNKNOWN',
  'FELIX_CLIENT_SHARD_UNAVAILABLE',
  'FELIX_CLIENT_DRAINING',
  'FELIX_CLIENT_OVERLOADED',
]);

const HINTS: Record<string, string> = {
  FELIX_CLIENT_CONNECT:
    'check --server (FELIX_SERVERS), the TLS pin (--fingerprint or --ca) and that the broker runs',
  FELIX_CLIENT_UNAUTHENTICATED:
    'the broker refused the token: mint one for the broker audience (felixctl token mint --audience felix-broker; the login token needs token.delegate) and pass --token or store it in a context',
  FELIX_CLIENT_FORBIDDEN: 'the token lacks this permission: grant it through felixctl rbac',
  FELIX_CLIENT_NOT_FOUND:
    'check the name: streams and caches are in the catalog (felixctl streams list <tenant> <namespace>, caches list <tenant> <namespace>); a group exists from its first poll',
  FELIX_CLIENT_UNKNOWN_STREAM: 'is it in the catalog? felixctl streams list <tenant> <namespace>',
  FELIX_CLIENT_NOT_LEADER:
    'another broker leads that shard (the message names its client address): pass it as --server; felixctl does not follow redirects yet',
  FELIX_CLIENT_TIMEOUT: 'the broker did not answer in time; raise --timeout or check its load',
  FELIX_CLIENT_FEATURE_UNSUPPORTED:
    'this broker does not offer it (watches, counters and groups need durable storage)',
  FELIX_CLIENT_CURSOR_TOO_OLD: 'retention removed it: start from earliest',
  FELIX_CLIENT_CURSOR_IN_FUTURE: 'that offset is past the tail: start from latest',
  FELIX_CLIENT_OUTCOME_UNKNOWN: 'the record may or may not be stored: read the stream to check',
  FELIX_CLIENT_INVALID_ARGUMENT: 'see felixctl <command> --help',
};

interface Coded {
  code?: unknown;
  brokerCode?: unknown;
  message?: unknown;
  cause?: unknown;
  hint?: unknown;
}

function codeOf(err: unknown): string | undefined {
  const c = (err as Coded | null)?.code;
  return typeof c === 'string' ? c : undefined;
}

/** The most telling error: a connect failure's cause when that cause is a refusal. */
function innermost(err: unknown): unknown {
  const cause = (err as Coded | null)?.cause;
  if (codeOf(err) === 'FELIX_CLIENT_CONNECT' && codeOf(cause)?.startsWith('FELIX_CLIENT_'))
    return cause;
  return err;
}

/** The hint for a broker the cluster named as an owner: --server was not at fault. */
const LEARNED_OWNER_HINT =
  "the cluster names that broker as the shard's owner and it did not answer (down, or a failover under way): try again shortly; --server needs no change";

/** The one line felixctl prints for `err`. */
export function describeError(err: unknown): string {
  const e = innermost(err) as Coded & { learned?: unknown };
  const code = codeOf(e);
  const broker = typeof e?.brokerCode === 'string' ? ` (${e.brokerCode})` : '';
  const message = e instanceof Error ? e.message : String(e);
  const hint =
    typeof e?.hint === 'string'
      ? e.hint
      : e?.learned === true
        ? LEARNED_OWNER_HINT
        : code
          ? HINTS[code]
          : undefined;
  const head = code ? `${code}${broker}: ${message}` : message;
  return hint ? `${head}; hint: ${hint}` : head;
}

/** The exit code for `err` (EXIT). */
export function exitCodeOf(err: unknown): number {
  const code = codeOf(innermost(err));
  if (code === 'FELIX_CTL_USAGE' || code === 'FELIX_CLIENT_INVALID_ARGUMENT') return EXIT.usage;
  if (code === 'FELIX_CTL_ABSENT') return EXIT.absent;
  if (code !== undefined && UNAVAILABLE.has(code)) return EXIT.unavailable;
  if (code?.startsWith('FELIX_CLIENT_')) return EXIT.refused;
  return EXIT.usage;
}
