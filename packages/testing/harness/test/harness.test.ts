// Goal: waitFor returns as soon as its condition holds and fails with a typed error at its
// deadline; freePort hands out ports no outgoing connection can take meanwhile, and
// releasedTcpPort one that refuses a connect.
import { connect, createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  DeadlineExceededError,
  ephemeralPortRange,
  freePort,
  releasedTcpPort,
  waitFor,
} from '../src/index.js';

describe('harness', () => {
  it('wait_for_returns_the_first_truthy_value', async () => {
    let n = 0;
    const v = await waitFor(() => (++n >= 3 ? n : 0), 'three polls', 1000);
    expect(v).toBe(3);
  });

  it('wait_for_fails_with_a_typed_error_at_its_deadline', async () => {
    await expect(waitFor(() => false, 'never', 30)).rejects.toBeInstanceOf(DeadlineExceededError);
  });

  it('a_free_port_lies_below_the_kernels_ephemeral_range_and_binds', async () => {
    const { low } = ephemeralPortRange();
    for (let i = 0; i < 20; i++) {
      const port = await freePort();
      expect(port).toBeLessThan(low);
      expect(port).toBeGreaterThanOrEqual(10_000);
      // Still free: a listener takes it.
      const srv = createServer();
      await new Promise<void>((ok, fail) => {
        srv.once('error', fail);
        srv.listen(port, '127.0.0.1', ok);
      });
      await new Promise<void>((ok) => srv.close(() => ok()));
    }
  });

  it('a_released_tcp_port_refuses_a_connect', async () => {
    const port = await releasedTcpPort();
    const err = await new Promise<unknown>((ok) => {
      const s = connect(port, '127.0.0.1');
      s.once('error', ok);
      s.once('connect', () => {
        s.destroy();
        ok(null);
      });
    });
    expect(err).toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('a_free_port_is_never_one_that_fetch_refuses', async (ctx) => {
    // CI once drew 10080 for a control plane's bootstrap listener: every fetch failed "bad port".
    const { low } = ephemeralPortRange();
    const room = low - 10_000;
    // Where the kernel's range starts below 10080 the pick never reaches it.
    if (room <= 80) ctx.skip();
    await expect(fetch('http://127.0.0.1:10080/')).rejects.toMatchObject({
      cause: { message: 'bad port' },
    });
    // The first pick lands on 10080, the next ones spread out.
    let calls = 0;
    const steer = () => (calls++ === 0 ? 80.5 / room : Math.random());
    const port = await freePort(steer);
    expect(calls).toBeGreaterThan(1);
    expect(port).not.toBe(10080);
  });
});
