/**
 * What `felix-broker --print-config` prints: the loaded config with every credential replaced by
 * `<redacted>` (a `secret` setting of the registry, and the password of a URL setting), so the
 * output can be pasted into a ticket or a log without leaking a node token.
 */
import { CONFIG_VARS } from './registry.js';
import type { BrokerConfig } from './types.js';

export const REDACTED = '<redacted>';

/** A URL with its password (if any) replaced; anything that is not a URL is returned as is. */
function redactUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // Not a URL (the empty "unset" value): it carries no password to hide.
    return raw;
  }
  if (url.password === '') return raw;
  return `${url.protocol}//${url.username}:${REDACTED}@${url.host}${url.pathname}${url.search}${url.hash}`;
}

/** A copy of `cfg` safe to print; `cfg` itself is left alone. */
export function printableConfig(cfg: BrokerConfig): BrokerConfig {
  const out = structuredClone(cfg) as unknown as Record<string, Record<string, unknown>>;
  for (const v of CONFIG_VARS) {
    const [section, name] = v.key.split('.') as [string, string];
    const values = out[section];
    const value = values?.[name];
    if (values === undefined || typeof value !== 'string') continue;
    if (v.secret === true) values[name] = REDACTED;
    else if (v.format === 'http_url') values[name] = redactUrl(value);
  }
  return out as unknown as BrokerConfig;
}
