import { Controller, Delete, Get, Next, Patch, Post, Put, Res } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { Reflector } from '@nestjs/core';
import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { resolveModuleOptions } from '../idempotency.options.js';
import { IdempotencyMetadataAccessor } from './idempotency-metadata.accessor.js';
import { IdempotentHandler } from './idempotent-handler.decorator.js';

@Controller('payments')
class PaymentsController {
  @Post()
  @IdempotentHandler()
  plain() {}

  @Put(':id/refund')
  @IdempotentHandler({ key: { body: 'id' } })
  refund() {}

  @EventPattern('payment.settled')
  @IdempotentHandler()
  settled(event: unknown) {
    return event;
  }

  @IdempotentHandler({
    consumer: 'ledger',
    sender: 'stripe',
    retention: '72h',
    inFlight: 'wait',
    maxAttempts: 2,
    retryDelay: '250ms',
    retryAfter: '2500ms',
    isolationLevel: 'SERIALIZABLE',
    fingerprint: false,
    key: { body: 'id' },
    mode: 'lease',
    lease: '5s',
    renewLeaseFor: '2m',
    store: 'redis',
    record: 'status',
  })
  configured() {}

  @IdempotentHandler({ mode: 'lease', renewLeaseFor: false })
  unrenewed() {}

  @IdempotentHandler({ mode: 'lease', renewLeaseFor: '1y' as never })
  badRenewal() {}
  @Post('shared')
  @IdempotentHandler({ scope: false })
  shared() {}

  @IdempotentHandler({ scope: 'alice' as never })
  badScope() {}

  @IdempotentHandler({ retention: 'forever' as never })
  badRetention() {}

  @IdempotentHandler({ maxAttempts: 0 })
  badAttempts() {}

  @IdempotentHandler({ inFlight: 'queue' as never })
  badPolicy() {}

  @IdempotentHandler({ sender: 'stri\u0000pe' })
  badSender() {}

  @IdempotentHandler({ retryDelay: '30d' })
  badDelay() {}

  @IdempotentHandler({ record: 'headers' as never })
  badRecord() {}

  @Post('charge')
  @IdempotentHandler({ recordErrors: [402] })
  charge() {}

  @Post('lease-charge')
  @IdempotentHandler({ mode: 'lease', recordErrors: [402] })
  leaseCharge() {}

  @Post('leased')
  @IdempotentHandler({ mode: 'lease' })
  leased() {}

  @Post('server-error')
  @IdempotentHandler({ recordErrors: [402, 500] })
  recordsServerError() {}

  @EventPattern('payment.refused')
  @IdempotentHandler({ recordErrors: [402] })
  refusedEvent(event: unknown) {
    return event;
  }
}

abstract class WebhookBase {
  @Post()
  @IdempotentHandler({ key: { body: 'id' } })
  receive() {}
}
@Controller('a')
class ProviderAController extends WebhookBase {}
@Controller('b')
class ProviderBController extends WebhookBase {}

class ResponseController {
  @IdempotentHandler()
  writesItself(@Res() res: unknown) {
    return res;
  }

  @IdempotentHandler()
  passesThrough(@Res({ passthrough: true }) res: unknown) {
    return res;
  }

  @IdempotentHandler()
  callsNext(@Next() next: unknown) {
    return next;
  }
}

describe('IdempotencyMetadataAccessor', () => {
  const accessor = new IdempotencyMetadataAccessor(new Reflector(), resolveModuleOptions({ retention: '7d' }), []);
  const resolve = (method: keyof PaymentsController) => accessor.resolveFor(PaymentsController, method);

  it('defaults the consumer to the route, keeps the former name, fingerprints the client key, and the rest to the module', () => {
    expect(resolve('plain')).toEqual({
      name: 'PaymentsController.plain',
      consumer: 'POST /payments',
      clientKey: true,
      legacyConsumer: 'PaymentsController.plain',
      namesConsumer: false,
      successStatus: 201,
      requestMethod: 'POST',
      key: undefined,
      required: true,
      sender: 'default',
      retentionMs: 7 * 86_400_000,
      inFlight: undefined,
      fingerprint: 'request',
      isolationLevel: undefined,
      maxAttempts: 5,
      retryDelayMs: 1_000,
      retryAfterSeconds: 1,
      respondsItself: false,
      mode: 'transaction',
      leaseMs: 30_000,
      renewLeaseForMs: 600_000,
      store: 'postgres',
      record: 'response',
      recordErrors: new Set(),
    });
  });

  it('keeps what the decorator says', () => {
    expect(resolve('configured')).toEqual({
      name: 'PaymentsController.configured',
      clientKey: false,
      consumer: 'ledger',
      legacyConsumer: undefined,
      namesConsumer: true,
      successStatus: undefined,
      requestMethod: undefined,
      key: [{ body: 'id' }],
      required: true,
      sender: 'stripe',
      retentionMs: 72 * 3_600_000,
      inFlight: 'wait',
      fingerprint: false,
      isolationLevel: 'SERIALIZABLE',
      maxAttempts: 2,
      retryDelayMs: 250,
      retryAfterSeconds: 3,
      respondsItself: false,
      mode: 'lease',
      leaseMs: 5_000,
      renewLeaseForMs: 120_000,
      store: 'redis',
      record: 'status',
      recordErrors: new Set(),
    });
  });

  it('refuses bad handler options, naming the handler', () => {
    expect(() => resolve('badRetention')).toThrow(IdempotencyOptionsError);
    expect(() => resolve('badRetention')).toThrow(/retention of PaymentsController.badRetention must be a duration/);
    expect(() => resolve('badAttempts')).toThrow(/maxAttempts of PaymentsController.badAttempts must be a whole number/);
    expect(() => resolve('badPolicy')).toThrow("inFlight of PaymentsController.badPolicy must be one of 'reject', 'wait'; got \"queue\".");
    expect(() => resolve('badSender')).toThrow(/the sender of PaymentsController.badSender\) contains control characters/);
    expect(() => resolve('badDelay')).toThrow("retryDelay of PaymentsController.badDelay must be at most '24d'; got \"30d\".");
    expect(() => resolve('badRenewal')).toThrow(/renewLeaseFor of PaymentsController.badRenewal must be a duration/);
    expect(() => resolve('badRecord')).toThrow("record of PaymentsController.badRecord must be one of 'response', 'status'; got \"headers\".");
  });

  it('renews no lease with renewLeaseFor: false', () => {
    expect(resolve('unrenewed').renewLeaseForMs).toBe(0);
  });

  it('gives a method inherited by two controllers a consumer per controller, resolved once each', () => {
    const a = accessor.resolveFor(ProviderAController, 'receive');
    const b = accessor.resolveFor(ProviderBController, 'receive');
    expect([a.consumer, b.consumer]).toEqual(['POST /a', 'POST /b']);
    expect([a.legacyConsumer, b.legacyConsumer]).toEqual(['ProviderAController.receive', 'ProviderBController.receive']);
    expect(accessor.resolveFor(ProviderAController, 'receive')).toBe(a);
  });

  it('names a consumer by its external contract, which renaming the class or the method leaves as it is', () => {
    @Controller('payments')
    class RenamedPaymentsController {
      @Post()
      @IdempotentHandler()
      placePayment() {}

      @EventPattern('payment.settled')
      @IdempotentHandler()
      onSettled(event: unknown) {
    return event;
  }
    }
    expect(accessor.resolveFor(RenamedPaymentsController, 'placePayment').consumer).toBe(resolve('plain').consumer);
    expect(accessor.resolveFor(RenamedPaymentsController, 'onSettled').consumer).toBe('payment.settled');
    expect(resolve('refund').consumer).toBe('PUT /payments/:id/refund');
    expect(resolve('settled')).toMatchObject({ consumer: 'payment.settled', legacyConsumer: 'PaymentsController.settled', requestMethod: undefined });
  });

  it("fingerprints a route's request by default whatever its key source; a message pattern's handler compares none", () => {
    expect(resolve('plain').fingerprint).toBe('request');
    expect(resolve('refund').fingerprint).toBe('request');
    expect(resolve('settled').fingerprint).toBe(false);
  });

  it('scopes client-keyed routes by the module\'s scope, unless a handler opts out; webhooks and messages are not scoped by it', () => {
    const scope = () => 'alice';
    const scoped = new IdempotencyMetadataAccessor(new Reflector(), resolveModuleOptions({ scope }), []);
    expect(scoped.resolveFor(PaymentsController, 'plain').scope).toBe(scope);
    expect(scoped.resolveFor(PaymentsController, 'shared').scope).toBe(false);
    expect(scoped.resolveFor(PaymentsController, 'refund').scope).toBeUndefined();
    expect(scoped.resolveFor(PaymentsController, 'settled').scope).toBeUndefined();
    expect(() => resolve('badScope')).toThrow(/scope of PaymentsController.badScope must be a function/);
    expect(() => resolveModuleOptions({ scope: 'alice' as never })).toThrow(IdempotencyOptionsError);
  });

  it('records the error statuses a handler lists, else the module\'s for HTTP handlers in the transactional mode only', () => {
    expect(resolve('charge').recordErrors).toEqual(new Set([402]));
    expect(resolve('plain').recordErrors).toEqual(new Set());
    const byDefault = new IdempotencyMetadataAccessor(new Reflector(), resolveModuleOptions({ recordErrors: [402, 409] }), []);
    expect(byDefault.resolveFor(PaymentsController, 'plain').recordErrors).toEqual(new Set([402, 409]));
    expect(byDefault.resolveFor(PaymentsController, 'charge').recordErrors).toEqual(new Set([402]));
    expect(byDefault.resolveFor(PaymentsController, 'leased').recordErrors).toEqual(new Set());
    expect(byDefault.resolveFor(PaymentsController, 'settled').recordErrors).toEqual(new Set());
  });

  it("records a 5xx a handler lists; refuses recordErrors in lease mode, or on a message handler, saying why", () => {
    expect(resolve('recordsServerError').recordErrors).toEqual(new Set([402, 500]));
    expect(() => resolve('leaseCharge')).toThrow(
      "PaymentsController.leaseCharge sets recordErrors in lease mode: a refusal is recorded with the handler's work rolled back to a " +
        "savepoint of the claim's transaction, and a lease-mode handler's work is outside it. Remove recordErrors, or use mode: 'transaction'.",
    );
    expect(() => resolve('refusedEvent')).toThrow('PaymentsController.refusedEvent sets recordErrors, which records HTTP error answers, but it is not an HTTP route.');
  });

  it('knows which handlers write their response themselves', () => {
    const respondsItself = (method: keyof ResponseController) => accessor.resolveFor(ResponseController, method).respondsItself;
    expect(respondsItself('writesItself')).toBe(true);
    expect(respondsItself('passesThrough')).toBe(false);
    expect(respondsItself('callsNext')).toBe(true);
  });

  it('reads the module\'s key and scope for the handlers of each entry that set none; a handler\'s own replace them', () => {
    const requestId = { header: 'X-Request-Id' };
    const tenant = () => 'tenant-1';
    const caller = () => 'alice';
    const withDefaults = new IdempotencyMetadataAccessor(
      new Reflector(),
      resolveModuleOptions({ key: { http: [requestId, { header: 'Idempotency-Key' }], rpc: { body: 'eventId' } }, scope: { http: caller, rpc: tenant } }),
      [],
    );
    expect(withDefaults.resolveFor(PaymentsController, 'plain')).toMatchObject({ key: [requestId, { header: 'Idempotency-Key' }], clientKey: true, scope: caller, fingerprint: 'request' });
    expect(withDefaults.resolveFor(PaymentsController, 'refund')).toMatchObject({ key: [{ body: 'id' }], clientKey: false, scope: undefined });
    expect(withDefaults.resolveFor(PaymentsController, 'settled')).toMatchObject({ key: [{ body: 'eventId' }], clientKey: false, scope: tenant, fingerprint: false });
    expect(() => resolveModuleOptions({ key: { header: 'X-Request-Id' } as never })).toThrow(
      'key must be given per entry, an object of \'http\', \'graphql\', \'rpc\'; got {"header":"X-Request-Id"}.',
    );
    expect(() => resolveModuleOptions({ key: { http: { query: 'k' } as never } })).toThrow(/^key\.http must be \{ header: 'Name' \}/);
    expect(() => resolveModuleOptions({ scope: { rpc: 'tenant' as never } })).toThrow(/^scope\.rpc must be a function/);
  });

  it("does not scope a provider handler of another framework (a BullMQ processor) by the module's scope, which reads an HTTP caller", () => {
    class PaymentsProcessor {
      @IdempotentHandler()
      process(job: unknown) {
        return job;
      }
    }
    const bullmq = { transport: 'bullmq', contract: (target: unknown, method: string) => (target === PaymentsProcessor && method === 'process' ? 'bullmq payments' : undefined) };
    const scoped = new IdempotencyMetadataAccessor(new Reflector(), resolveModuleOptions({ scope: () => 'alice' }), [bullmq]);
    expect(scoped.resolveFor(PaymentsProcessor, 'process')).toMatchObject({ consumer: 'bullmq payments', scope: undefined });
  });

  it('takes required: false on an HTTP route, and refuses it on a message handler, saying why', () => {
    class OptionalKeys {
      @Post('optional')
      @IdempotentHandler({ required: false })
      route() {}

      @EventPattern('optional')
      @IdempotentHandler({ required: false })
      event(payload: unknown) {
        return payload;
      }
    }
    expect(accessor.resolveFor(OptionalKeys, 'route').required).toBe(false);
    expect(() => accessor.resolveFor(OptionalKeys, 'event')).toThrow(
      'OptionalKeys.event sets required: false, but it is no HTTP route nor GraphQL mutation: a message without a key would run unclaimed, ' +
        'and its broker would not be told whether it was processed. Remove required: false; give the handler a key it always finds (key: ...).',
    );
  });

  it('applies a class-level decorator to the routes that change state, the handler\'s own options over the class\'s, and leaves a base class as it is', () => {
    class OrdersBase {
      @Delete(':id')
      remove() {}
    }
    @Controller('orders')
    @IdempotentHandler({ retention: '3d', sender: 'shop' })
    class OrdersController extends OrdersBase {
      @Get()
      list() {}

      @Post()
      place() {}

      @Patch(':id')
      @IdempotentHandler({ sender: 'backoffice', key: { body: 'requestId' } })
      amend() {}
    }
    expect(accessor.getOptions(OrdersController.prototype.list)).toBeUndefined();
    expect(accessor.resolveFor(OrdersController, 'place')).toMatchObject({ consumer: 'POST /orders', retentionMs: 3 * 86_400_000, sender: 'shop', key: undefined });
    expect(accessor.resolveFor(OrdersController, 'amend')).toMatchObject({ consumer: 'PATCH /orders/:id', retentionMs: 3 * 86_400_000, sender: 'backoffice', key: [{ body: 'requestId' }] });
    expect(accessor.resolveFor(OrdersController, 'remove')).toMatchObject({ consumer: 'DELETE /orders/:id', sender: 'shop' });
    expect(accessor.getOptions(OrdersBase.prototype.remove)).toBeUndefined();
  });

  it('answers undefined for a method without the decorator', () => {
    expect(accessor.getOptions(function notDecorated() {})).toBeUndefined();
  });
});
