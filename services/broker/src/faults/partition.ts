/**
 * The test partition file (`testing.partition_file`, docs/reliability.md "Fault seams in the
 * broker"): one entry per line, `controlplane` or `node:<node id>`, `#` comments and blank lines
 * ignored. The broker reads it once at start (so a cut present from the first moment holds for
 * the first call) and then every FAULT_FILE_POLL_MS on an unref'd timer; a missing or empty file
 * cuts nothing. When `controlplane` appears, control-plane calls in flight are aborted and new
 * ones fail before being sent (`partitionedFetch`); `node:<id>` entries are read by the peer
 * links (cluster/peer-links.ts). After each reading whose text changed, once the cut is in force
 * (links closed), the broker writes that text to `<file>.applied`: a harness waits for it
 * instead of guessing how long a poll takes on a loaded machine. Without the setting none of
 * this exists.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { open, rename, writeFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { PartitionedError } from '../errors.js';
import { FAULT_FILE_POLL_MS, PARTITION_FILE_BYTES_MAX, PARTITION_PEERS_MAX } from '../limits.js';

export interface PartitionCut {
  controlPlane: boolean;
  /** Node ids this broker cannot reach. */
  peers: ReadonlySet<string>;
}

export interface ParsedPartition {
  cut: PartitionCut;
  /** Lines not understood (or peers past PARTITION_PEERS_MAX). */
  ignored: number;
}

export const NO_CUT: PartitionCut = { controlPlane: false, peers: new Set() };

/** Parses the file's text; never throws (a half-written file is read again 50 ms later). */
export function parsePartition(text: string): ParsedPartition {
  let controlPlane = false;
  const peers = new Set<string>();
  let ignored = 0;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line === 'controlplane') controlPlane = true;
    else if (line.startsWith('node:') && line.length > 5 && peers.size < PARTITION_PEERS_MAX) {
      peers.add(line.slice(5).trim());
    } else ignored++;
  }
  return { cut: { controlPlane, peers }, ignored };
}

const decoder = new TextDecoder();

/** Reads up to PARTITION_FILE_BYTES_MAX bytes; a missing or unreadable file reads as empty. */
function readNow(path: string): string {
  try {
    const fd = openSync(path, 'r');
    try {
      const buf = new Uint8Array(PARTITION_FILE_BYTES_MAX);
      return decoder.decode(buf.subarray(0, readSync(fd, buf, 0, buf.length, 0)));
    } finally {
      closeSync(fd);
    }
  } catch {
    return ''; // no file: nothing is cut (the documented contract)
  }
}

async function readLater(path: string): Promise<string> {
  try {
    const handle = await open(path, 'r');
    try {
      const buf = new Uint8Array(PARTITION_FILE_BYTES_MAX);
      const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
      return decoder.decode(buf.subarray(0, bytesRead));
    } finally {
      await handle.close();
    }
  } catch {
    return ''; // no file: nothing is cut (the documented contract)
  }
}

/** Replaces `<file>.applied` whole (write, rename): a reader never sees half of it. */
async function acknowledge(file: string, text: string): Promise<void> {
  await writeFile(`${file}.applied.tmp`, text);
  await rename(`${file}.applied.tmp`, `${file}.applied`);
}

function sameCut(a: PartitionCut, b: PartitionCut): boolean {
  if (a.controlPlane !== b.controlPlane || a.peers.size !== b.peers.size) return false;
  for (const p of a.peers) if (!b.peers.has(p)) return false;
  return true;
}

export class Partition {
  private current: PartitionCut = NO_CUT;
  /** Aborted when the control plane gets cut; replaced by a fresh one at each cut. */
  private cpAbort = new AbortController();
  private timer: NodeJS.Timeout | null = null;
  private reading = false;
  private warnedIgnored = 0;
  /** The text last written to `<file>.applied` (null: none yet). */
  private acked: string | null = null;
  private warnedAck = false;
  private readonly listeners: Array<(cut: PartitionCut) => void> = [];

  constructor(
    readonly file: string,
    private readonly log: Logger,
  ) {}

  /** The partition the config names, reading and watching its file; null when unset. */
  static fromConfig(path: string | null, log: Logger): Partition | null {
    if (path === null || path.trim() === '') return null;
    log.warn({ partition_file: path }, 'fault injection enabled');
    const p = new Partition(path, log);
    const text = readNow(path);
    p.apply(parsePartition(text));
    p.reading = true; // the first acknowledgement before any poll's: one writer of the file
    void p.acknowledge(text).finally(() => {
      p.reading = false;
    });
    p.timer = setInterval(() => p.poll(), FAULT_FILE_POLL_MS);
    p.timer.unref();
    return p;
  }

  get cut(): PartitionCut {
    return this.current;
  }

  get controlPlaneCut(): boolean {
    return this.current.controlPlane;
  }

  /** Aborts when the control plane is cut from now on (calls in flight listen to it). */
  get controlPlaneSignal(): AbortSignal {
    return this.cpAbort.signal;
  }

  peerCut(nodeId: string): boolean {
    return this.current.peers.has(nodeId);
  }

  /** Called after every change of the cut (peer links close what it names). */
  onChange(listener: (cut: PartitionCut) => void): void {
    this.listeners.push(listener);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private poll(): void {
    if (this.reading) return;
    this.reading = true;
    void readLater(this.file)
      .then((text) => {
        this.apply(parsePartition(text));
        return this.acknowledge(text);
      })
      .finally(() => {
        this.reading = false;
      });
  }

  /** Says, once per change of the file's text, that what it reads is in force. */
  private async acknowledge(text: string): Promise<void> {
    if (text === this.acked) return;
    try {
      await acknowledge(this.file, text);
      this.acked = text;
    } catch (err) {
      // The cut is in force either way; only a harness waiting on the file misses it.
      if (this.warnedAck) return;
      this.warnedAck = true;
      this.log.warn({ partition_file: this.file, err }, 'cannot acknowledge the partition file');
    }
  }

  /** @internal Takes a parsed reading (exported for the unit test of the transitions). */
  apply(parsed: ParsedPartition): void {
    if (parsed.ignored !== this.warnedIgnored) {
      this.warnedIgnored = parsed.ignored;
      if (parsed.ignored > 0) {
        this.log.warn({ partition_file: this.file, ignored: parsed.ignored }, 'lines ignored');
      }
    }
    const before = this.current;
    if (sameCut(before, parsed.cut)) return;
    this.current = parsed.cut;
    if (parsed.cut.controlPlane && !before.controlPlane) {
      this.cpAbort.abort(new PartitionedError('the control plane'));
      this.cpAbort = new AbortController();
    }
    this.log.warn(
      { controlplane: parsed.cut.controlPlane, peers: [...parsed.cut.peers] },
      'test partition changed',
    );
    for (const l of this.listeners) l(parsed.cut);
  }
}

/**
 * `fetch` through the partition: while the control plane is cut a call fails at once without
 * being sent, and one in flight is aborted when the cut appears. Every control-plane call
 * (cluster/control-plane-client.ts, session/jwks.ts) is made through this when the file is set.
 */
export function partitionedFetch(p: Partition, inner: typeof fetch = fetch): typeof fetch {
  return (input, init) => {
    if (p.controlPlaneCut) return Promise.reject(new PartitionedError('the control plane'));
    const cut = p.controlPlaneSignal;
    const signal = init?.signal ? AbortSignal.any([init.signal, cut]) : cut;
    return inner(input, { ...init, signal });
  };
}
