import { type ExecutionContext } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { Processor, WorkerHost } from '@nestjs/bullmq';
import { UnrecoverableError } from 'bullmq';
import { BULLMQ_PROCESSORS, BullmqTransport } from './bullmq.transport.js';

@Processor('payments')
class PaymentsProcessor extends WorkerHost {
  process() {
    return Promise.resolve();
  }
  helper() {}
}

class NoProcessor {
  process() {}
}

function callContext(type: string, job: unknown): ExecutionContext {
  const context = new ExecutionContextHost([job]);
  context.setType(type);
  return context;
}

describe('BullmqTransport', () => {
  const transport = new BullmqTransport();
  Object.assign(transport, { logger: { error() {}, warn() {} } });
  const job = { id: 'job-1', name: 'pay', queueName: 'payments', data: { orderId: 'o-1' }, attemptsMade: 0, opts: { attempts: 3 } };

  it("names a processor's process method by its queue, and nothing else", () => {
    expect(BULLMQ_PROCESSORS.contract(PaymentsProcessor, 'process')).toBe('bullmq payments');
    expect(BULLMQ_PROCESSORS.contract(PaymentsProcessor, 'helper')).toBeUndefined();
    expect(BULLMQ_PROCESSORS.contract(NoProcessor, 'process')).toBeUndefined();
  });

  it("reads a call of its own type: the job's data is the payload, its id the key", () => {
    const message = transport.read(callContext('bullmq', job))!;
    expect(message.payload).toEqual({ orderId: 'o-1' });
    expect(message.messageId).toBe('job-1');
    expect(message.header('anything')).toBeUndefined();
    expect(transport.read(callContext('rpc', job))).toBeUndefined();
  });

  it("qualifies BullMQ's own numbered id by the time the job was added; a custom jobId is the key as it is", () => {
    const numbered = { ...job, id: '42', timestamp: 1_764_633_600_000 };
    expect(transport.read(callContext('bullmq', numbered))!.messageId).toBe('42@1764633600000');
    expect(transport.read(callContext('bullmq', { ...numbered, id: '0042' }))!.messageId).toBe('0042');
  });

  it("leaves a retry to the job's attempts, and answers a dead-letter with an error BullMQ does not retry", () => {
    const message = transport.read(callContext('bullmq', job))!;
    expect(message.settle!({ kind: 'ack' }, 'bullmq orders')).toBeUndefined();
    expect(message.settle!({ kind: 'retry', attemptKey: 'k', maxAttempts: 5, retryDelayMs: 1_000, consumer: 'bullmq orders', key: 'o-1', reason: 'boom' }, 'bullmq orders')).toBeUndefined();
    const { error: failure } = message.settle!({ kind: 'dead-letter', consumer: 'bullmq orders', key: undefined, reason: 'no key' }, 'bullmq orders') as { error: Error };
    // BullMQ's worker tells its own UnrecoverableError by name: this test fails should that change.
    expect(failure.name).toBe(new UnrecoverableError().name);
    expect(failure.message).toBe('no key');
  });
});
