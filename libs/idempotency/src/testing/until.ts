import { ok } from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `probe` until it answers true; fails after `timeoutMs`. The pause between probes doubles
 * from 10 ms to at most 100 ms: a state reached at once is seen at once, and a long wait (a
 * redelivery, a broker's group) does not probe the broker or the database 40 times a second.
 * @internal
 */
export async function until(probe: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 10; !(await probe()); pause = Math.min(pause * 2, 100)) {
    ok(Date.now() < deadline, `timed out waiting until ${what}`);
    await sleep(pause);
  }
}
