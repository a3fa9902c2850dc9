/**
 * felixctl: list/create/delete tenants, namespaces, streams and caches; view nodes and
 * assignments. Tables by default, `--json` for scripts. The command logic takes its output
 * sink and fetch so tests run it in-process.
 */
import { Command, CommanderError } from 'commander';

export interface CliIo {
  out: (line: string) => void;
  err: (line: string) => void;
  fetch: typeof fetch;
  env: Record<string, string | undefined>;
}

type Json = Record<string, unknown>;

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: Json,
  ) {
    super(`${status} ${String(body.code ?? '')}: ${String(body.message ?? '')}`);
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

export async function runFelixctl(argv: string[], io: CliIo): Promise<number> {
  const program = new Command('felixctl');
  program
    .description('Manage a Felix control plane')
    .option(
      '--url <url>',
      'control-plane URL',
      io.env.FELIX_CONTROLPLANE_URL ?? 'http://127.0.0.1:8443',
    )
    .option('--json', 'print JSON instead of tables', false)
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.out(s.trimEnd()),
      writeErr: (s) => io.err(s.trimEnd()),
    });

  const opts = () => program.opts<{ url: string; json: boolean }>();
  const call = async (method: string, path: string, body?: unknown): Promise<Json> => {
    const res = await io.fetch(new URL(path, opts().url), {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const json = (text ? JSON.parse(text) : {}) as Json;
    if (!res.ok) throw new ApiError(res.status, json);
    return json;
  };
  const listAll = async (path: string): Promise<Json[]> => {
    const items: Json[] = [];
    let cursor: string | undefined;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const page = await call(
        'GET',
        cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path,
      );
      items.push(...(page.items as Json[]));
      cursor = (page.next_cursor as string | null) ?? undefined;
    } while (cursor);
    return items;
  };
  const show = (data: Json | Json[], columns: string[]) => {
    if (opts().json) io.out(JSON.stringify(data, null, 2));
    else for (const l of table(Array.isArray(data) ? data : [data], columns)) io.out(l);
  };
  const seg = encodeURIComponent;

  const tenants = program.command('tenants').description('tenants');
  tenants
    .command('list')
    .action(async () => show(await listAll('/v1/tenants'), ['tenant_id', 'display_name']));
  tenants
    .command('create <tenant>')
    .option('--display-name <name>')
    .action(async (t: string, o: { displayName?: string }) =>
      show(await call('POST', '/v1/tenants', { tenant_id: t, display_name: o.displayName }), [
        'tenant_id',
        'display_name',
      ]),
    );
  tenants.command('delete <tenant>').action(async (t: string) => {
    await call('DELETE', `/v1/tenants/${seg(t)}`);
    io.out(`deleted tenant ${t}`);
  });

  const namespaces = program.command('namespaces').description('namespaces');
  namespaces
    .command('list <tenant>')
    .action(async (t: string) =>
      show(await listAll(`/v1/tenants/${seg(t)}/namespaces`), [
        'tenant_id',
        'namespace',
        'display_name',
      ]),
    );
  namespaces
    .command('create <tenant> <namespace>')
    .action(async (t: string, ns: string) =>
      show(await call('POST', `/v1/tenants/${seg(t)}/namespaces`, { namespace: ns }), [
        'tenant_id',
        'namespace',
      ]),
    );
  namespaces.command('delete <tenant> <namespace>').action(async (t: string, ns: string) => {
    await call('DELETE', `/v1/tenants/${seg(t)}/namespaces/${seg(ns)}`);
    io.out(`deleted namespace ${t}/${ns}`);
  });

  const streamCols = [
    'tenant_id',
    'namespace',
    'stream',
    'shards',
    'replication_factor',
    'consistency',
    'durable',
    'routing',
  ];
  const streams = program.command('streams').description('streams');
  streams
    .command('list <tenant> <namespace>')
    .action(async (t: string, ns: string) =>
      show(await listAll(`/v1/tenants/${seg(t)}/namespaces/${seg(ns)}/streams`), streamCols),
    );
  streams
    .command('create <tenant> <namespace> <stream>')
    .option('--shards <n>', 'shard count', Number)
    .option('--replication-factor <n>', 'copies of each shard', Number)
    .option('--consistency <c>', 'Leader or Quorum')
    .option('--durable', 'keep records on disk')
    .option('--routing <r>', 'modulo or jump_hash')
    .option('--max-age-seconds <n>', 'retention by age', Number)
    .option('--max-size-bytes <n>', 'retention by size', Number)
    .action(async (t: string, ns: string, name: string, o: Json) => {
      const retention =
        o.maxAgeSeconds !== undefined || o.maxSizeBytes !== undefined
          ? { max_age_seconds: o.maxAgeSeconds ?? null, max_size_bytes: o.maxSizeBytes ?? null }
          : undefined;
      const body = {
        stream: name,
        shards: o.shards,
        replication_factor: o.replicationFactor,
        consistency: o.consistency,
        durable: o.durable,
        routing: o.routing,
        retention,
      };
      show(
        await call('POST', `/v1/tenants/${seg(t)}/namespaces/${seg(ns)}/streams`, body),
        streamCols,
      );
    });
  streams
    .command('delete <tenant> <namespace> <stream>')
    .action(async (t: string, ns: string, name: string) => {
      await call('DELETE', `/v1/tenants/${seg(t)}/namespaces/${seg(ns)}/streams/${seg(name)}`);
      io.out(`deleted stream ${t}/${ns}/${name}`);
    });

  const cacheCols = [
    'tenant_id',
    'namespace',
    'cache',
    'shards',
    'replication_factor',
    'consistency',
  ];
  const caches = program.command('caches').description('caches');
  caches
    .command('list <tenant> <namespace>')
    .action(async (t: string, ns: string) =>
      show(await listAll(`/v1/tenants/${seg(t)}/namespaces/${seg(ns)}/caches`), cacheCols),
    );
  caches
    .command('create <tenant> <namespace> <cache>')
    .option('--shards <n>', 'shard count', Number)
    .option('--replication-factor <n>', 'copies of each shard', Number)
    .option('--consistency <c>', 'Leader or Quorum')
    .action(async (t: string, ns: string, name: string, o: Json) =>
      show(
        await call('POST', `/v1/tenants/${seg(t)}/namespaces/${seg(ns)}/caches`, {
          cache: name,
          shards: o.shards,
          replication_factor: o.replicationFactor,
          consistency: o.consistency,
        }),
        cacheCols,
      ),
    );
  caches
    .command('delete <tenant> <namespace> <cache>')
    .action(async (t: string, ns: string, name: string) => {
      await call('DELETE', `/v1/tenants/${seg(t)}/namespaces/${seg(ns)}/caches/${seg(name)}`);
      io.out(`deleted cache ${t}/${ns}/${name}`);
    });

  program
    .command('nodes')
    .description('nodes with their placement view')
    .action(async () =>
      show(await listAll('/v1/nodes'), [
        'node.node_id',
        'node.spec.advertise_addr',
        'node.spec.zone',
        'node.status.lifecycle',
        'node.status.incarnation',
        'placement.eligible',
        'placement.routable',
        'placement.heartbeat_age_ms',
        'placement.reasons',
      ]),
    );
  program
    .command('assignments')
    .description('shard assignments')
    .option('--leader <node>', 'only shards this node leads')
    .action(async (o: { leader?: string }) =>
      show(
        await listAll(
          o.leader ? `/v1/shard-assignments?leader=${seg(o.leader)}` : '/v1/shard-assignments',
        ),
        ['kind', 'tenant_id', 'namespace', 'stream', 'shard', 'leader', 'replicas', 'generation'],
      ),
    );

  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    if (err instanceof ApiError) {
      io.err(`felixctl: ${err.message}`);
      return 1;
    }
    io.err(`felixctl: ${err instanceof Error ? err.message : String(err)}`);
    return 2;
  }
}
