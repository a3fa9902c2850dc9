/**
 * The client's token: a fixed string, or a provider (an async function) asked for a fresh one
 * before the current one expires. The refresh is due TOKEN_REFRESH_AT_LIFETIME_FRACTION (two
 * thirds) into the token's lifetime, read from its `iat`/`exp` (or the expiry the broker answered
 * to `reauth`); the fresh token is then presented to the live connection (`reauth` in band, or
 * kept for the next reconnect on a broker that cannot). A failure (provider or refused `reauth`)
 * is reported as a `token_refresh_failed` status event and retried after a jittered, capped
 * delay, never sooner than TOKEN_REFRESH_DELAY_MS_MIN. The timer never keeps the process alive
 * and stops at `stop()`.
 */
import { InvalidTokenError, TokenProviderError } from '../errors.js';
import {
  TOKEN_PROVIDER_TIMEOUT_MS,
  TOKEN_REFRESH_AT_LIFETIME_FRACTION,
  TOKEN_REFRESH_ATTEMPTS_MAX,
  TOKEN_REFRESH_DELAY_MS_MIN,
  TOKEN_REFRESH_RETRY_BASE_MS,
  TOKEN_REFRESH_RETRY_DELAY_MS_MAX,
  TOKEN_REFRESH_TIMER_MS_MAX,
} from '../limits.js';
import type { StatusEvent } from '../status.js';
import type { TokenProvider } from '../types.js';
import { backoffDelayMs } from '../util/backoff.js';
import { type TokenTimes, tokenTimes } from './claims.js';

/** What presenting a fresh token to the live connection came to. */
export interface Presented {
  /** `reauth_ok` came: the live connection now runs on the fresh token. */
  reauthenticated: boolean;
  /** The expiry the broker answered (unix ms), when it named one. */
  expiresAtMs?: number | undefined;
}

export interface KeeperHooks {
  /** Presents a fresh token to the live connection (if any); rejects when the broker refuses it. */
  present(token: string): Promise<Presented>;
  emit(event: StatusEvent): void;
}

/** Time as the keeper sees it (real unless a test pins it). */
export interface KeeperClock {
  now(): number;
  /** Runs `fn` after `ms`; the timer must not keep the process alive. Answers a canceller. */
  after(ms: number, fn: () => void): () => void;
  random(): number;
}

export const REAL_CLOCK: KeeperClock = {
  now: () => Date.now(),
  after(ms, fn) {
    const timer = setTimeout(fn, ms);
    timer.unref?.(); // a refresh alone must not keep a process running
    return () => clearTimeout(timer);
  },
  random: Math.random,
};

export class TokenKeeper {
  private token: string;
  private times: TokenTimes = { issuedAtMs: undefined, expiresAtMs: undefined };
  /** When the client got the current token (the lifetime's start when it has no `iat`). */
  private gotAtMs = 0;
  private cancelTimer: (() => void) | null = null;
  /** A provider call in progress (a refresh and a reconnect share it). */
  private fetching: Promise<string> | null = null;
  private failures = 0;
  /** The broker refused the current token at `auth`: the next reconnect asks for a fresh one. */
  private stale = false;
  private stopped = false;

  constructor(
    private readonly source: string | TokenProvider,
    private readonly hooks: KeeperHooks,
    private readonly clock: KeeperClock = REAL_CLOCK,
  ) {
    this.token = typeof source === 'string' ? source : '';
  }

  /** The newest token (what a stream opened now authenticates with). */
  get current(): string {
    return this.token;
  }

  /** Whether the keeper refreshes (a provider was given). */
  get refreshes(): boolean {
    return typeof this.source === 'function';
  }

  /** Asks the provider for the first token and schedules its refresh. Throws TokenProviderError. */
  async start(): Promise<void> {
    if (!this.refreshes) return;
    this.adopt(await this.fetch());
    this.schedule();
  }

  /**
   * The token a new connection should authenticate with: a fresh one when the current one is
   * past its refresh point or was refused. Throws TokenProviderError (that reconnect attempt
   * fails and the reconnect loop tries again after its own backoff).
   */
  async forConnect(): Promise<string> {
    if (!this.refreshes || this.stopped) return this.token;
    const due = this.refreshAtMs();
    const now = this.clock.now();
    // A token got within the floor is not asked for again (a provider handing out tokens already
    // past their refresh point would otherwise be called on every connect attempt).
    const fresh = now - this.gotAtMs < TOKEN_REFRESH_DELAY_MS_MIN;
    if (this.stale || (due !== undefined && now >= due && !fresh)) {
      this.adopt(await this.fetch());
      this.stale = false;
      this.failures = 0;
      this.schedule();
    }
    return this.token;
  }

  /** The broker refused the current token at `auth`: the next connect asks for a fresh one. */
  markRefused(): void {
    this.stale = true;
  }

  stop(): void {
    this.stopped = true;
    this.cancelTimer?.();
    this.cancelTimer = null;
  }

  /** When the current token is due for refresh (unix ms); undefined when its expiry is unknown. */
  refreshAtMs(): number | undefined {
    const exp = this.times.expiresAtMs;
    if (exp === undefined) return undefined;
    const from = Math.min(this.times.issuedAtMs ?? this.gotAtMs, exp);
    return from + Math.floor((exp - from) * TOKEN_REFRESH_AT_LIFETIME_FRACTION);
  }

  private adopt(token: string): void {
    this.token = token;
    this.gotAtMs = this.clock.now();
    try {
      this.times = tokenTimes(token);
    } catch (err) {
      if (!(err instanceof InvalidTokenError)) throw err;
      // An opaque token (dev mode, another issuer): no known expiry, so no refresh on a
      // schedule unless the broker names one in `reauth_ok`.
      this.times = { issuedAtMs: undefined, expiresAtMs: undefined };
    }
  }

  private schedule(): void {
    this.cancelTimer?.();
    this.cancelTimer = null;
    const due = this.refreshAtMs();
    if (this.stopped || due === undefined) return;
    this.arm(due - this.clock.now());
  }

  private arm(delayMs: number): void {
    const ms = Math.min(Math.max(delayMs, TOKEN_REFRESH_DELAY_MS_MIN), TOKEN_REFRESH_TIMER_MS_MAX);
    this.cancelTimer = this.clock.after(ms, () => {
      this.cancelTimer = null;
      void this.onTimer();
    });
  }

  private async onTimer(): Promise<void> {
    if (this.stopped) return;
    const due = this.refreshAtMs();
    // A capped timer of a long-lived token fired early: wait on.
    if (this.failures === 0 && due !== undefined && this.clock.now() < due) {
      this.schedule();
      return;
    }
    await this.refresh();
  }

  /** One refresh: a fresh token from the provider, presented to the live connection. */
  async refresh(): Promise<void> {
    let token: string;
    try {
      token = await this.fetch();
    } catch (err) {
      this.failed(err as Error);
      return;
    }
    if (this.stopped) return;
    this.adopt(token);
    let presented: Presented;
    try {
      presented = await this.hooks.present(token);
    } catch (err) {
      // Refused (UnauthenticatedError) or unanswered: the live connection still runs on the old
      // token, so try again (a connection lost meanwhile is not an error: `present` says so).
      this.failed(err as Error);
      return;
    }
    if (presented.expiresAtMs !== undefined)
      this.times = { ...this.times, expiresAtMs: presented.expiresAtMs };
    this.failures = 0;
    this.hooks.emit({
      type: 'token_refreshed',
      reauthenticated: presented.reauthenticated,
      ...(this.times.expiresAtMs !== undefined ? { expiresAtMs: this.times.expiresAtMs } : {}),
    });
    this.schedule();
  }

  private failed(error: Error): void {
    if (this.stopped) return;
    const attempt = ++this.failures;
    const final = attempt >= TOKEN_REFRESH_ATTEMPTS_MAX;
    const retryInMs = final
      ? undefined
      : Math.max(
          TOKEN_REFRESH_DELAY_MS_MIN,
          backoffDelayMs(attempt - 1, {
            baseMs: TOKEN_REFRESH_RETRY_BASE_MS,
            maxMs: TOKEN_REFRESH_RETRY_DELAY_MS_MAX,
            random: this.clock.random,
          }),
        );
    this.hooks.emit({
      type: 'token_refresh_failed',
      attempt,
      error,
      ...(retryInMs !== undefined ? { retryInMs } : {}),
    });
    if (retryInMs === undefined) {
      // Given up on the timer; a reconnect refused as unauthenticated asks the provider again.
      this.stale = true;
      return;
    }
    this.arm(retryInMs);
  }

  /** Calls the provider once (shared by concurrent callers), bounded by its timeout. */
  private fetch(): Promise<string> {
    this.fetching ??= this.callProvider().finally(() => {
      this.fetching = null;
    });
    return this.fetching;
  }

  private async callProvider(): Promise<string> {
    const provider = this.source as TokenProvider;
    let cancel: (() => void) | undefined;
    let token: unknown;
    try {
      token = await Promise.race([
        Promise.resolve().then(provider),
        new Promise<never>((_, reject) => {
          cancel = this.clock.after(TOKEN_PROVIDER_TIMEOUT_MS, () =>
            reject(new TokenProviderError(`no answer within ${TOKEN_PROVIDER_TIMEOUT_MS} ms`)),
          );
        }),
      ]);
    } catch (err) {
      if (err instanceof TokenProviderError) throw err;
      throw new TokenProviderError(err instanceof Error ? err.message : String(err), {
        cause: err,
      });
    } finally {
      cancel?.();
    }
    if (typeof token !== 'string' || token === '')
      throw new TokenProviderError('it answered something other than a non-empty string');
    return token;
  }
}
