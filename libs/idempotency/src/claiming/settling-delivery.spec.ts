import { AsyncLocalStorage } from 'node:async_hooks';
import type { ActiveClaim } from '../context/idempotency.context.js';
import { IdempotencyUnavailableError } from '../errors/idempotency.errors.js';
import type { DeliveryOutcome } from '../metrics/delivery-outcome.js';
import type { RecordedResponse } from './claim.js';
import { SettlingDelivery } from './settling-delivery.js';

const RESPONSE: RecordedResponse = { status: 201, headers: {}, body: Buffer.from('{}') };

/** A delivery that writes down each step it is asked for, in order; its completion fails with `completionError`, if given. */
class StepsDelivery extends SettlingDelivery {
  readonly rollbackUndoesWork = true;
  protected readonly active: ActiveClaim = { consumer: 'Payments.charge', key: 'order-7', sender: 'shop', downstreamKey: 'd' };

  constructor(
    storage: AsyncLocalStorage<ActiveClaim>,
    private readonly steps: string[],
    private readonly completionError?: Error,
  ) {
    super(storage, (outcome: DeliveryOutcome) => void steps.push(`counted ${outcome}`));
  }

  protected async complete(response: RecordedResponse): Promise<void> {
    this.steps.push(`complete ${response.status}`);
    if (this.completionError) {
      throw this.completionError;
    }
  }

  protected async undo(): Promise<void> {
    this.steps.push('undo');
  }

  protected override async afterCommit(): Promise<void> {
    this.steps.push('close');
  }
}

describe('SettlingDelivery, the settle-once skeleton both modes share', () => {
  const storage = new AsyncLocalStorage<ActiveClaim>();
  let steps: string[];

  beforeEach(() => {
    steps = [];
  });

  it('runs the handler with its claim reachable, and none after', async () => {
    const delivery = new StepsDelivery(storage, steps);
    await expect(delivery.run(async () => storage.getStore()?.key)).resolves.toBe('order-7');
    expect(storage.getStore()).toBeUndefined();
  });

  it('commits once: completes, counts processed, closes; a second commit or a rollback then does nothing', async () => {
    const delivery = new StepsDelivery(storage, steps);
    await delivery.commit(RESPONSE);
    await delivery.commit(RESPONSE);
    await delivery.rollback('failed');
    expect(steps).toEqual(['complete 201', 'counted processed', 'close']);
  });

  it('a completion that fails is thrown as it is, counted by its outcome, and still closes', async () => {
    const failure = new IdempotencyUnavailableError('store down', 'Payments.charge', 'order-7');
    const delivery = new StepsDelivery(storage, steps, failure);
    await expect(delivery.commit(RESPONSE)).rejects.toBe(failure);
    await delivery.rollback('failed');
    expect(steps).toEqual(['complete 201', 'counted unavailable', 'close']);
  });

  it('rolls back once: undoes the claim, then counts how the delivery ended; a commit then does nothing', async () => {
    const delivery = new StepsDelivery(storage, steps);
    await delivery.rollback('rejected');
    await delivery.rollback('failed');
    await delivery.commit(RESPONSE);
    expect(steps).toEqual(['undo', 'counted rejected']);
  });
});
