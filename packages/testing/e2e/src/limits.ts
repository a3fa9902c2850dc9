/** How long a broker may take to log `listening`: a loaded CI machine starts tsx slowly. */
export const BROKER_START_DEADLINE_MS = 30_000;
