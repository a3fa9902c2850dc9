/**
 * The broker's node credential for the control plane (`cluster.node_token` or
 * `cluster.node_token_file`), sent as `Authorization: Bearer` on every control-plane call. The
 * file is re-read at most every NODE_TOKEN_REREAD_MS, on the call that finds it stale, so a
 * rotated credential is picked up without a restart and without a timer of its own.
 */
import { readFile, stat } from 'node:fs/promises';
import type { BrokerConfig } from '../config/types.js';
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
      if ((await stat(file)).size > NODE_TOKEN_FILE_BYTES_MAX) throw new Error('too large');
      const text = (await readFile(file, 'utf8')).trim();
      this.value = text === '' ? null : text;
    } catch {
      // Keep the last credential read: a file being replaced must not drop the broker's identity.
    }
    this.readAtMs = this.now();
    return this.value;
  }
}
