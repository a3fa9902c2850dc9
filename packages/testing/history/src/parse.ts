/**
 * Reads a JSONL history into typed lines. Bounded: a line or a file past its limit is a typed
 * error, and so is a line that is not an object of the shape history.ts describes (named by its
 * 1-based line number). Nothing else is ever thrown. The checker judges what the lines mean.
 */
import { readFile, stat } from 'node:fs/promises';
import {
  HistoryLineMalformedError,
  HistoryLineTooLongError,
  HistoryReadError,
  HistoryTooLargeError,
} from './errors.js';
import type { HistoryLine } from './history.js';
import { HISTORY_BYTES_MAX, HISTORY_LINE_BYTES_MAX, HISTORY_LINES_MAX } from './limits.js';

type Kind = 'string' | 'number' | 'boolean' | 'array' | 'object' | 'string|null';
type Fields = Record<string, Kind>;

const PHASES = new Set(['invoke', 'ok', 'fail', 'info']);
const ERROR_FIELDS: Fields = { error: 'string' };

/** Required fields per kind of line and phase ('*' is every phase not listed). */
const SHAPES: Record<string, Record<string, Fields>> = {
  meta: {
    ok: { seed: 'number', streams: 'array', groups: 'array', caches: 'array', counters: 'array' },
  },
  publish: {
    invoke: { stream: 'string', value: 'string', attempt: 'number' },
    ok: { shard: 'number', offset: 'number' },
    '*': ERROR_FIELDS,
  },
  subscribe: {
    invoke: { stream: 'string', shard: 'number', from: 'number' },
    ok: {},
    '*': ERROR_FIELDS,
  },
  deliver: {
    ok: { sub: 'string', stream: 'string', shard: 'number', offset: 'number', value: 'string' },
  },
  gap: { ok: { sub: 'string', stream: 'string', shard: 'number', from: 'number', to: 'number' } },
  final_read: { ok: { stream: 'string', shard: 'number', start: 'number', values: 'array' } },
  cache_put: {
    invoke: { cache: 'string', key: 'string', value: 'string' },
    ok: {},
    '*': ERROR_FIELDS,
  },
  cache_get: { invoke: { cache: 'string', key: 'string' }, ok: { value: 'string|null' }, '*': {} },
  cache_final: { ok: { cache: 'string', key: 'string', value: 'string|null' } },
  counter_add: {
    invoke: { counter: 'string', key: 'string', delta: 'number' },
    ok: {},
    '*': ERROR_FIELDS,
  },
  counter_final: { ok: { counter: 'string', key: 'string', value: 'number' } },
  group_poll: {
    invoke: { stream: 'string', group: 'string', shard: 'number', consumer: 'string' },
    ok: { records: 'array' },
    '*': ERROR_FIELDS,
  },
  group_ack: { invoke: settleFields(), ok: {}, '*': ERROR_FIELDS },
  group_nack: { invoke: settleFields(), ok: {}, '*': ERROR_FIELDS },
  group_final: {
    ok: {
      stream: 'string',
      group: 'string',
      shard: 'number',
      end: 'number',
      deadLettered: 'array',
    },
  },
  nemesis: { invoke: { fault: 'string', target: 'string' }, '*': {} },
};

function settleFields(): Fields {
  return {
    stream: 'string',
    group: 'string',
    shard: 'number',
    offset: 'number',
    consumer: 'string',
  };
}

function kindOf(value: unknown): Kind | 'null' | 'other' {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  const t = typeof value;
  if (t === 'number') return Number.isFinite(value) ? 'number' : 'other';
  if (t === 'string' || t === 'boolean' || t === 'object') return t;
  return 'other';
}

function fits(value: unknown, kind: Kind): boolean {
  const found = kindOf(value);
  if (kind === 'string|null') return found === 'string' || found === 'null';
  return found === kind;
}

/** Why a parsed JSON value is not a history line, or undefined when it is one. */
function shapeProblem(value: unknown): string | undefined {
  if (kindOf(value) !== 'object') return 'not a JSON object';
  const line = value as Record<string, unknown>;
  const base: Fields = {
    t: 'number',
    process: 'string',
    phase: 'string',
    id: 'string',
    f: 'string',
  };
  for (const [name, kind] of Object.entries(base)) {
    if (!fits(line[name], kind)) return `field "${name}" is missing or not a ${kind}`;
  }
  if (!PHASES.has(line.phase as string)) return `unknown phase "${String(line.phase)}"`;
  const shapes = SHAPES[line.f as string];
  if (shapes === undefined) return `unknown operation "${String(line.f)}"`;
  const fields = shapes[line.phase as string] ?? shapes['*'];
  if (fields === undefined) return `"${String(line.f)}" has no "${String(line.phase)}" phase`;
  for (const [name, kind] of Object.entries(fields)) {
    if (!fits(line[name], kind)) return `field "${name}" is missing or not a ${kind}`;
  }
  return listProblem(line);
}

/** The elements of the arrays the checker reads must have their types too. */
function listProblem(line: Record<string, unknown>): string | undefined {
  if (line.f === 'final_read' && !(line.values as unknown[]).every((v) => fits(v, 'string|null'))) {
    return 'final_read values must all be strings or null';
  }
  if (
    line.f === 'group_final' &&
    !(line.deadLettered as unknown[]).every((v) => fits(v, 'number'))
  ) {
    return 'group_final deadLettered must all be numbers';
  }
  if (line.f === 'group_poll' && line.phase === 'ok') {
    const record: Fields = { offset: 'number', value: 'string', attempt: 'number' };
    for (const r of line.records as unknown[]) {
      if (kindOf(r) !== 'object') return 'a handed-out record is not an object';
      for (const [name, kind] of Object.entries(record)) {
        if (!fits((r as Record<string, unknown>)[name], kind)) {
          return `a handed-out record's "${name}" is missing or not a ${kind}`;
        }
      }
    }
  }
  return undefined;
}

function parseLine(text: string, lineNumber: number): HistoryLine {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > HISTORY_LINE_BYTES_MAX) {
    throw new HistoryLineTooLongError(lineNumber, bytes, HISTORY_LINE_BYTES_MAX);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new HistoryLineMalformedError(lineNumber, `not JSON (${(err as Error).message})`);
  }
  const problem = shapeProblem(value);
  if (problem !== undefined) throw new HistoryLineMalformedError(lineNumber, problem);
  return value as HistoryLine;
}

/** Parses a whole JSONL history; blank lines are skipped (a trailing newline is usual). */
export function parseHistory(text: string): HistoryLine[] {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > HISTORY_BYTES_MAX) throw new HistoryTooLargeError(bytes, HISTORY_BYTES_MAX, 'bytes');
  const lines: HistoryLine[] = [];
  let start = 0;
  let lineNumber = 0;
  while (start <= text.length) {
    const newline = text.indexOf('\n', start);
    const end = newline === -1 ? text.length : newline;
    lineNumber += 1;
    const raw = text.slice(start, end);
    if (raw.trim() !== '') {
      if (lines.length >= HISTORY_LINES_MAX) {
        throw new HistoryTooLargeError(lineNumber, HISTORY_LINES_MAX, 'lines');
      }
      lines.push(parseLine(raw, lineNumber));
    }
    if (newline === -1) break;
    start = newline + 1;
  }
  return lines;
}

/** Reads and parses a history file; its size is checked before it is read. */
export async function readHistory(path: string): Promise<HistoryLine[]> {
  let text: string;
  try {
    const info = await stat(path);
    if (info.size > HISTORY_BYTES_MAX) {
      throw new HistoryTooLargeError(info.size, HISTORY_BYTES_MAX, 'bytes');
    }
    text = await readFile(path, 'utf8');
  } catch (err) {
    if (err instanceof HistoryTooLargeError) throw err;
    throw new HistoryReadError(path, { cause: err });
  }
  return parseHistory(text);
}
