/**
 * felixctl: manage the catalog, view nodes and assignments, log in, mint and refresh tokens,
 * and manage RBAC. Tables by default, `--json` for scripts. Every command sends the token
 * (`--token`, else FELIX_TOKEN, else the one `login` stored). The command logic takes its output
 * sink and fetch so tests run it in-process.
 */
import { Command, CommanderError } from 'commander';
import { Api, ApiError, type CliIo, type Target } from './api.js';
import { authCommands } from './auth-commands.js';
import { catalogCommands } from './catalog-commands.js';
import { type Credentials, credentialsPath, readCredentials } from './credentials.js';

export { table } from './api.js';
export type { CliIo } from './api.js';

const DEFAULT_URL = 'http://127.0.0.1:8443';

function buildProgram(io: CliIo, stored: Credentials, path: string): Command {
  const program = new Command('felixctl');
  program
    .description('Manage a Felix control plane')
    .option(
      '--url <url>',
      `control-plane URL (FELIX_CONTROLPLANE_URL, the stored one, ${DEFAULT_URL})`,
    )
    .option('--token <token>', 'Felix token to send (FELIX_TOKEN, else the stored one)')
    .option('--json', 'print JSON instead of tables', false)
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
  return program;
}

export async function runFelixctl(argv: string[], io: CliIo): Promise<number> {
  try {
    const path = credentialsPath(io.env);
    const program = buildProgram(io, await readCredentials(path), path);
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
