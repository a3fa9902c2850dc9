/**
 * The broker's node credential for the control plane (`cluster.node_token` or
 * `cluster.node_token_file`), sent as `Authorization: Bearer` on every control-plane call. The
 * file is re-read at most every NODE_TOKEN_REREAD_MS, on the call that finds it stale, so a
 * rotated credential is picked up without a restart and without a timer of its own. At start
 * the file must hold a credential (`verify`); later an empty or unreadable file keeps the last one.
 */
import { readFile, stat } from 'node:fs/promises';
import { errorReason } from '@felix/common';
import type { BrokerConfig } from '../config/types.js';
import { NodeTokenFileError } from '../errors.js';
import { NODE_TOKEN_FILE_BYTES_MAX, NODE_TOKEN_REREAD_MS } from '../limits.js';

export class NodeToken {
  private value: string | null;
  private readAtMs = Number.NEGATIVE_INFINITY;
  private reading: Promise<string | null> | null = null;

  constructor(
    private readonly file: string | null,
    fixed: string | null,
    private readonly now: () => number = Date.now,
  ) {
    this.value = fixed;
  }

  static of(cfg: BrokerConfig): NodeToken {
    return new NodeToken(cfg.cluster.node_token_file, cfg.cluster.node_token);
  }

  /**
   * Reads the file now and refuses a missing, unreadable, oversized or empty one: a broker that
   * started without its credential would be refused on every control-plane call it makes.
   */
  async verify(): Promise<void> {
    if (this.file === null) return;
    let text: string;
    try {
      text = await readTokenFile(this.file);
    } catch (err) {
      throw new NodeTokenFileError(this.file, errorReason(err), { cause: err });
    }
    if (text === '') throw new NodeTokenFileError(this.file, 'is empty: it must hold the token');
    this.value = text;
    this.readAtMs = this.now();
  }

  /** The current credential, or null when none is configured (or the file cannot be read). */
  get(): Promise<string | null> {
    if (this.file === null || this.now() - this.readAtMs < NODE_TOKEN_REREAD_MS) {
      return Promise.resolve(this.value);
    }
    this.reading ??= this.reread(this.file).finally(() => {
      this.reading = null;
    });
    return this.reading;
  }

  private async reread(file: string): Promise<string | null> {
    try {
      const text = await readTokenFile(file);
      // An empty file is one being rewritten in place: keep the credential read before.
      if (text !== '') this.value = text;
    } catch {
      // Keep the last credential read: a file being replaced must not drop the broker's identity.
    }
    this.readAtMs = this.now();
    return this.value;
  }
}

async function readTokenFile(file: string): Promise<string> {
  const size = (await stat(file)).size;
  if (size > NODE_TOKEN_FILE_BYTES_MAX) {
    throw new Error(
      `is ${size} bytes, above NODE_TOKEN_FILE_BYTES_MAX (${NODE_TOKEN_FILE_BYTES_MAX})`,
    );
  }
  return (await readFile(file, 'utf8')).trim();
}
