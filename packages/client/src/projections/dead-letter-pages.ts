/**
 * Pages of a group's dead letters: the caller's page options checked, and a page made from the
 * one list a broker without FEATURE_HI_GROUP_DEAD_LETTER_PAGES answers (its lowest 1,000, with
 * `after` and `limit` ignored). Such a page is exact while the list is shorter than 1,000; past
 * a full list nothing is known, and asking there is refused rather than answered empty.
 */
import { FeatureUnsupportedError, InvalidArgumentError } from '../errors.js';
import { GROUP_DEAD_LETTER_PAGE_OFFSETS_MAX } from '../limits.js';

/** The options of a dead-letter page (with the admin calls' `signal`). */
export interface DeadLetterPageOptions {
  /** Ends the call, while it waits for a connection or for the broker's answer, with
   *  AbortedError (nothing is changed by a list). */
  signal?: AbortSignal;
  /** Only offsets strictly above this one: the last offset of the page before. Absent: from
   *  the lowest. */
  after?: number;
  /** Offsets the page holds at most, 1 to 1,000 (the broker's bound, and the default). */
  limit?: number;
}

/** One page of dead-letter offsets, lowest first. */
export interface DeadLetterPage {
  offsets: number[];
  /** Dead letters remain above the page's last offset: ask again with it as `after`. */
  more: boolean;
}

/** The page options as sent, or InvalidArgumentError before anything is sent. */
export function checkPage(opts: DeadLetterPageOptions): { after?: number; limit?: number } {
  const { after, limit } = opts;
  if (after !== undefined && !(Number.isSafeInteger(after) && after >= 0)) {
    throw new InvalidArgumentError(`after must be an offset (a whole number >= 0), got ${after}`);
  }
  if (
    limit !== undefined &&
    !(Number.isInteger(limit) && limit >= 1 && limit <= GROUP_DEAD_LETTER_PAGE_OFFSETS_MAX)
  ) {
    throw new InvalidArgumentError(
      `limit must be a whole number 1..${GROUP_DEAD_LETTER_PAGE_OFFSETS_MAX}, got ${limit}`,
    );
  }
  return { ...(after !== undefined ? { after } : {}), ...(limit !== undefined ? { limit } : {}) };
}

/** The page asked for, cut from an unpaged broker's list (its lowest dead letters). */
export function pageOfUnpagedList(
  list: readonly number[],
  page: { after?: number; limit?: number },
): DeadLetterPage {
  const after = page.after ?? -1;
  const limit = page.limit ?? GROUP_DEAD_LETTER_PAGE_OFFSETS_MAX;
  // A full list may have more above it that this broker cannot list.
  const full = list.length >= GROUP_DEAD_LETTER_PAGE_OFFSETS_MAX;
  const above = list.filter((offset) => offset > after);
  if (full && above.length === 0) {
    throw new FeatureUnsupportedError(
      `dead-letter pages past the first ${GROUP_DEAD_LETTER_PAGE_OFFSETS_MAX} (FEATURE_HI_GROUP_DEAD_LETTER_PAGES)`,
    );
  }
  return { offsets: above.slice(0, limit), more: above.length > limit || full };
}
