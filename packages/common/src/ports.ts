/**
 * Ports that `fetch` refuses to connect to: undici follows the WHATWG Fetch standard's "bad
 * port" list and fails with "bad port". Felix's brokers and felixctl reach the control plane
 * through fetch, so a control plane listening on one of these could not be reached at all (a
 * root container can bind the low ones); the test harness never hands one out.
 */
const FETCH_BLOCKED_PORTS: ReadonlySet<number> = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102,
  103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465,
  512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993,
  995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668,
  6669, 6679, 6697, 10080,
]);

/** Whether `fetch` refuses to connect to `port` (see FETCH_BLOCKED_PORTS). */
export function isFetchBlockedPort(port: number): boolean {
  return FETCH_BLOCKED_PORTS.has(port);
}
