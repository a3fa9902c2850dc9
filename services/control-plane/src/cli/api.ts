/**
 * How felixctl talks to the control plane: every request carries the bearer token (from
 * `--token`, FELIX_TOKEN, or the credentials file), errors become ApiError with the body's code
 * (UnreachableError when no answer came, with the transport's reason), and output is a table or
 * JSON.
 */
import { errorReason } from '@felix/common';
import { FELIXCTL_REQUEST_TIMEOUT_MS, NOT_JSON_EXCERPT_CHARS } from '../limits.js';
import { UnreachableError } from './data/report.js';

export interface CliIo {
  out: (line: string) => void;
  err: (line: string) => void;
  fetch: typeof fetch;
  env: Record<string, string | undefined>;
}

export type Json = Record<string, unknown>;

/** Why fetch failed, in the transport's words (fetch's own message is only "fetch failed"). */
function unreachableReason(err: unknown): string {
  if ((err as { name?: unknown } | null)?.name === 'TimeoutError')
    return `no answer within ${FELIXCTL_REQUEST_TIMEOUT_MS} ms (the request may have been applied)`;
  return errorReason(err);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: Json,
  ) {
    super(
      body.code === undefined && body.message === undefined
        ? // Every control-plane error names a code: this came from something else.
          `${status}: not a Felix control plane's answer (is --url its API address, port 8443 by default?)`
        : `${status} ${String(body.code ?? '')}: ${String(body.message ?? '')}`,
    );
  }
}

/** Renders rows as an aligned text table with the given columns. */
export function table(rows: Json[], columns: string[]): string[] {
  const cell = (v: unknown) =>
    v === null || v === undefined ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  const widths = columns.map((c) =>
    Math.max(c.length, ...rows.map((r) => cell(pick(r, c)).length)),
  );
  const line = (vals: string[]) =>
    vals
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [
    line(columns.map((c) => c.toUpperCase())),
    ...rows.map((r) => line(columns.map((c) => cell(pick(r, c))))),
  ];
}

function pick(row: Json, path: string): unknown {
  let v: unknown = row;
  for (const part of path.split('.'))
    v = v && typeof v === 'object' ? (v as Json)[part] : undefined;
  return v;
}

/** What a request is sent with; resolved per call because options are parsed late. */
export interface Target {
  url: string;
  token: string | undefined;
  json: boolean;
}

export interface CallOptions {
  /** Send no Authorization header (token refresh carries its credential in the body). */
  anonymous?: boolean;
  /** A bearer token other than the stored one (an upstream OIDC token for the exchange). */
  bearer?: string;
}

export class Api {
  constructor(
    private readonly io: CliIo,
    readonly target: () => Target,
  ) {}

  async call(method: string, path: string, body?: unknown, o: CallOptions = {}): Promise<Json> {
    const t = this.target();
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    const bearer = o.bearer ?? (o.anonymous ? undefined : t.token);
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    const url = new URL(path, t.url);
    let res: Response;
    let text: string;
    try {
      res = await this.io.fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(FELIXCTL_REQUEST_TIMEOUT_MS),
      });
      // The deadline covers the body too; a connection reset there is as unreachable.
      text = await res.text();
    } catch (err) {
      throw new UnreachableError(url.origin, unreachableReason(err), { cause: err });
    }
    let json: Json;
    try {
      const parsed: unknown = text ? JSON.parse(text) : {};
      // `null`, a number or an array is no answer of the control plane's either.
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
        throw new TypeError('not an object');
      json = parsed as Json;
    } catch {
      // Not the control plane's answer (a proxy's page, another service on that port).
      throw new ApiError(res.status, {
        code: 'not_json',
        message: `the answer from ${url.origin} is not a JSON object: ${text.slice(0, NOT_JSON_EXCERPT_CHARS)}`,
      });
    }
    if (!res.ok) throw new ApiError(res.status, json);
    return json;
  }

  async listAll(path: string): Promise<Json[]> {
    const items: Json[] = [];
    let cursor: string | undefined;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const page = await this.call(
        'GET',
        cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path,
      );
      items.push(...(page.items as Json[]));
      cursor = (page.next_cursor as string | null) ?? undefined;
    } while (cursor);
    return items;
  }

  show(data: Json | Json[], columns: string[]): void {
    if (this.target().json) this.io.out(JSON.stringify(data, null, 2));
    else for (const l of table(Array.isArray(data) ? data : [data], columns)) this.io.out(l);
  }

  out(line: string): void {
    this.io.out(line);
  }

  /** A command's closing line, or under --json the document saying the same, so stdout stays
   *  one JSON document a script can parse. */
  done(line: string, doc: Json): void {
    this.io.out(this.target().json ? JSON.stringify(doc, null, 2) : line);
  }
}

export const seg = encodeURIComponent;
