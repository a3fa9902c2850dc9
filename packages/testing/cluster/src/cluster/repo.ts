/** Where the built services live: the workspace root above this file (src/ or dist/). */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

function findRepo(from: string): string {
  let at = from;
  for (;;) {
    if (existsSync(join(at, 'pnpm-workspace.yaml'))) return at;
    const up = dirname(at);
    if (up === at) return join(from, '..', '..', '..', '..'); // not in a workspace: best guess
    at = up;
  }
}

export const REPO = findRepo(import.meta.dirname);
export const BROKER_MAIN = join(REPO, 'services', 'broker', 'dist', 'main.js');
export const CP_MAIN = join(REPO, 'services', 'control-plane', 'dist', 'main.js');
export const CP_DIR = join(REPO, 'services', 'control-plane');
