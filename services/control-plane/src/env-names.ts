/**
 * The environment variables the control plane reads at start. Found by running its config
 * readers over an environment that records every name asked for, so the list cannot drift from
 * the code (deployment manifests are checked against it). Every read in those readers is
 * unconditional today; a test compares the list with docs/control-plane.md in both directions.
 */
import { tokenSettingsFromEnv } from './auth/settings.js';
import { loadConfig } from './config.js';

export function controlPlaneEnvNames(): string[] {
  const seen = new Set<string>();
  const env = new Proxy({} as Record<string, string | undefined>, {
    get(_target, name) {
      if (typeof name === 'string') seen.add(name);
      return undefined;
    },
  });
  loadConfig(env, () => '');
  tokenSettingsFromEnv(env);
  return [...seen].sort();
}
