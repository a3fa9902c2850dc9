// Goal: waitFor returns as soon as its condition holds and fails with a typed error at its deadline.
import { describe, expect, it } from 'vitest';
import { DeadlineExceededError, waitFor } from '../src/index.js';

describe('harness', () => {
  it('wait_for_returns_the_first_truthy_value', async () => {
    let n = 0;
    const v = await waitFor(() => (++n >= 3 ? n : 0), 'three polls', 1000);
    expect(v).toBe(3);
  });

  it('wait_for_fails_with_a_typed_error_at_its_deadline', async () => {
    await expect(waitFor(() => false, 'never', 30)).rejects.toBeInstanceOf(DeadlineExceededError);
  });
});
