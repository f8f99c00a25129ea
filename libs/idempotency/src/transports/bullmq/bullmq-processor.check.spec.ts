import { getQueueToken, Processor, WorkerHost } from '@nestjs/bullmq';
import { queueToken, WORKER_METADATA } from './bullmq-processor.check.js';

@Processor('payments', { maxStalledCount: 0 })
class PaymentsProcessor extends WorkerHost {
  process() {
    return Promise.resolve();
  }
}

// The check reads @nestjs/bullmq's metadata and tokens without loading it: these fail should it rename them.
describe('BullmqProcessorCheck', () => {
  it("reads a processor's worker options where @Processor() puts them", () => {
    expect(Reflect.getMetadata(WORKER_METADATA, PaymentsProcessor)).toEqual({ maxStalledCount: 0 });
  });

  it('finds a registered queue by the token @nestjs/bullmq gives it', () => {
    expect(queueToken('payments')).toBe(getQueueToken('payments'));
  });
});
