import { ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { getDataSourceToken } from '@nestjs/typeorm';
import { IdempotencyOptionsError } from '../errors/idempotency-options.error.js';
import { IdempotencyModule } from '../idempotency.module.js';
import type { PurgeOptions } from '../idempotency.options.js';
import { purgeTimerName } from './purge.scheduler.js';

/** An application module without a database: the timer is registered long before it would fire. */
function compile(purge: PurgeOptions, withSchedule = true) {
  return Test.createTestingModule({
    imports: [...(withSchedule ? [ScheduleModule.forRoot()] : []), IdempotencyModule.forRoot({ purge })],
    providers: [{ provide: getDataSourceToken(), useValue: {} }],
  }).compile();
}

describe('PurgeScheduler', () => {
  it('registers the purge timer in SchedulerRegistry at bootstrap and removes it at shutdown', async () => {
    const moduleRef = await compile({ interval: '1m' });
    const registry = moduleRef.get(SchedulerRegistry);
    expect(registry.doesExist('interval', purgeTimerName('processed_messages'))).toBe(false);
    await moduleRef.init();
    expect(registry.getIntervals()).toEqual(['idempotency:purge:processed_messages']);
    await moduleRef.close();
    expect(registry.getIntervals()).toEqual([]);
  });

  it('registers no timer when the interval is false', async () => {
    const moduleRef = await compile({ interval: false });
    await moduleRef.init();
    expect(moduleRef.get(SchedulerRegistry).getIntervals()).toEqual([]);
    await moduleRef.close();
  });

  it('refuses to start a purge timer without ScheduleModule, saying how to fix it', async () => {
    const error = await (await compile({ interval: '1m' }, false)).init().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(IdempotencyOptionsError);
    expect((error as Error).message).toMatch(/import ScheduleModule\.forRoot\(\).*or set purge: \{ interval: false \}/);
  });

  it('starts without ScheduleModule when the timer is off', async () => {
    const moduleRef = await compile({ interval: false }, false);
    await expect(moduleRef.init()).resolves.toBe(moduleRef);
    await moduleRef.close();
  });
});
