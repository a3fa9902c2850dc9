/**
 * Ports that `fetch` refuses to connect to (undici follows the WHATWG Fetch standard's "bad
 * port" list and fails with "bad port"). Felix's brokers and felixctl reach the control plane
 * through fetch, so a control plane listening on one of these could not be reached at all; the
 * test harness never hands one out. Ports under 1024 are on the list too but need privileges a
 * Felix service does not run with, and are left out here.
 */
const FETCH_BLOCKED_PORTS: ReadonlySet<number> = new Set([
  1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669,
  6679, 6697, 10080,
]);

/** Whether `fetch` refuses to connect to `port` (see FETCH_BLOCKED_PORTS). */
export function isFetchBlockedPort(port: number): boolean {
  return FETCH_BLOCKED_PORTS.has(port);
}
