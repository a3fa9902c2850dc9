/** The loud warning printed whenever certificate verification is switched off. */
const warned = new Set<string>();

export function warnInsecure(address: string): void {
  if (warned.has(address)) return;
  warned.add(address);
  process.emitWarning(
    `TLS certificate verification is OFF for ${address} (insecureSkipVerify): anyone on the path can impersonate the server. Development only.`,
    { code: 'FELIX_TRANSPORT_INSECURE', type: 'SecurityWarning' },
  );
}
