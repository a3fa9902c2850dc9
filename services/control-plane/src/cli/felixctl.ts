/**
 * felixctl: manage the catalog, view nodes and assignments, log in, mint and refresh tokens,
 * and manage RBAC; and, through @felix/client, the data plane: pub, sub, cache, counter, group,
 * bench and connection contexts (cli/data/). Tables by default, `--json` for scripts. Every
 * catalog command sends the token (`--token`, else FELIX_TOKEN, else the one `login` stored).
 * The command logic takes its output sink and fetch so tests run it in-process.
 */
import { Command, CommanderError } from 'commander';
import { Api, ApiError, type Target } from './api.js';
import { authCommands } from './auth-commands.js';
import { catalogCommands } from './catalog-commands.js';
import { type Credentials, credentialsPath, readCredentials } from './credentials.js';
import {
  type ConnFlags,
  type DataIo,
  EXIT,
  dataCommands,
  describeError,
  exitCodeOf,
} from './data/index.js';

export { table } from './api.js';
export type { CliIo } from './api.js';
export type { DataIo } from './data/index.js';

const DEFAULT_URL = 'http://127.0.0.1:8443';

function buildProgram(io: DataIo, stored: Credentials, path: string): Command {
  const program = new Command('felixctl');
  program
    .description(
      'Manage a Felix control plane, and publish, read and benchmark through its brokers',
    )
    .option(
      '--url <url>',
      `control-plane URL (FELIX_CONTROLPLANE_URL, the stored one, ${DEFAULT_URL})`,
    )
    .option(
      '--token <token>',
      'Felix token to send (FELIX_TOKEN; else the stored login for catalog commands, the context for data verbs)',
    )
    .option('--json', 'print JSON instead of tables', false)
    .option('--debug', 'print the stack of an error')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.out(s.trimEnd()),
      writeErr: (s) => io.err(s.trimEnd()),
    });
  const opts = () => program.opts<{ url?: string; token?: string; json: boolean }>();
  const url = () => opts().url ?? io.env.FELIX_CONTROLPLANE_URL ?? stored.url ?? DEFAULT_URL;
  const explicitToken = () => opts().token ?? (io.env.FELIX_TOKEN || undefined);
  const target = (): Target => ({
    url: url(),
    token: explicitToken() ?? stored.token,
    json: opts().json,
  });
  const api = new Api(io, target);
  catalogCommands(program, api);
  authCommands(program, { api, credentialsPath: path, stored: () => stored, explicitToken, url });
  // The data verbs read their own flags merged with the program's (--token, --json).
  let verb: Command = program;
  program.hook('preAction', (_, action) => {
    verb = action;
  });
  const flags = () => verb.optsWithGlobals<ConnFlags & { json: boolean }>();
  dataCommands(program, { io, flags });
  return program;
}

/**
 * Runs felixctl; answers its exit code (docs/felixctl.md): 0 done, 1 refused by the control plane
 * or the broker, 2 a usage mistake, 3 no broker reachable or no answer in time, 4 a key with no
 * value. An error is one line with its code and a hint; `--debug` adds the stack.
 */
export async function runFelixctl(argv: string[], io: DataIo): Promise<number> {
  try {
    const path = credentialsPath(io.env);
    const program = buildProgram(io, await readCredentials(path), path);
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (err instanceof ApiError) {
      // A 401 is the commonest first stop: say how to get a control-plane token in. A token in
      // FELIX_TOKEN (often a broker token exported for data verbs) replaces the stored login,
      // so logging in again cannot help: say that first.
      const fromEnv = Boolean(io.env.FELIX_TOKEN) && !argv.includes('--token');
      const hint =
        err.status !== 401
          ? ''
          : fromEnv
            ? '; hint: FELIX_TOKEN is set and replaces the stored login for every call: unset it ' +
              '(or give a broker token per command) to use the login'
            : '; hint: log in with a control-plane token (felixctl --url URL login --tenant T ' +
              '--token TOKEN, docs/felixctl.md) or pass --token / FELIX_TOKEN';
      io.err(`felixctl: ${err.message}${hint}`);
      return EXIT.refused;
    }
    io.err(`felixctl: ${describeError(err)}`);
    if (argv.includes('--debug') && err instanceof Error && err.stack) io.err(err.stack);
    return exitCodeOf(err);
  }
}
