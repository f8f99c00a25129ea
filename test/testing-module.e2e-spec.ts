import { Body, type CallHandler, Controller, type ExecutionContext, type INestApplication, Injectable, Post } from '@nestjs/common';
import { BaseRpcContext, type CustomTransportStrategy, EventPattern, Payload, Server } from '@nestjs/microservices';
import { Test, type TestingModule } from '@nestjs/testing';
import { IdempotencyContext, IdempotencyContextError, IdempotencyInterceptor, IdempotencyOutboxError, IdempotentHandler, Outbox } from 'nestjs-idempotent-consumer';
import { IdempotencyTestingModule, TestingOutbox } from 'nestjs-idempotent-consumer/testing';
import { lastValueFrom } from 'rxjs';
import request from 'supertest';
import type { EntityManager } from 'typeorm';

interface Charge {
  orderId: string;
  cents: number;
}

/** The service a user's controller calls; a unit test replaces it with a fake, so it never runs here. */
@Injectable()
class PaymentsService {
  charge(charge: Charge): Promise<{ chargeId: string }> {
    throw new Error(`the real PaymentsService needs a database to charge order ${charge.orderId}`);
  }

  settle(orderId: string): Promise<void> {
    throw new Error(`the real PaymentsService needs a database to settle order ${orderId}`);
  }
}

@Controller('payments')
class PaymentsController {
  constructor(private readonly payments: PaymentsService) {}

  @Post()
  @IdempotentHandler()
  charge(@Body() body: Charge) {
    return this.payments.charge(body);
  }

  @EventPattern('payment.settled')
  @IdempotentHandler({ key: { body: 'id' } })
  async settled(@Payload() event: { id: string; orderId: string }) {
    await this.payments.settle(event.orderId);
  }
}

/** A controller that announces what it did through the outbox. */
@Controller('refunds')
class RefundsController {
  constructor(private readonly outbox: Outbox) {}

  @Post()
  @IdempotentHandler()
  async refund(@Body() body: { orderId: string }) {
    const id = await this.outbox.publish({ to: 'rabbitmq', address: 'refunds', pattern: 'refund.issued', payload: body, id: `refund-${body.orderId}` });
    return { id };
  }
}

/**
 * A worker whose framework calls `process` itself, without Nest's interceptors (as BullMQ does a
 * processor's): `@IdempotentHandler()` wraps the method.
 */
@Injectable()
class SettlementWorker {
  constructor(private readonly payments: PaymentsService) {}

  @IdempotentHandler({ key: { body: 'orderId' } })
  async process(job: { data: { orderId: string } }) {
    await this.payments.settle(job.data.orderId);
    return 'settled';
  }
}

/** A controller that writes through the claim's manager and reads the claim. */
@Controller('ledger')
class LedgerController {
  constructor(private readonly idempotency: IdempotencyContext) {}

  @Post()
  @IdempotentHandler()
  async record(@Body() body: { account: string; cents: number }) {
    await this.idempotency.manager.insert('ledger_entries', body);
    return this.claim();
  }

  @Post('claim')
  @IdempotentHandler()
  claim() {
    const { isActive, key, consumer, sender, downstreamKey } = this.idempotency;
    return { isActive, key, consumer, sender, downstreamKey };
  }
}

/** A fake of the service: what it was asked to do. */
function fakePayments() {
  const charges: Charge[] = [];
  const settled: string[] = [];
  return {
    charges,
    settled,
    service: {
      charge: async (charge: Charge) => {
        charges.push(charge);
        return { chargeId: `ch_${charges.length}` };
      },
      settle: async (orderId: string) => {
        settled.push(orderId);
      },
    },
  };
}

/** A transport in this process: hands a message to the handler Nest registered, through its interceptors. */
class InProcessTransport extends Server implements CustomTransportStrategy {
  listen(callback: () => void): void {
    callback();
  }

  close(): void {}

  on(): void {}

  unwrap<T>(): T {
    throw new Error('the in-process transport has no client');
  }

  async deliver(pattern: string, data: unknown): Promise<unknown> {
    const handler = this.getHandlerByPattern(pattern);
    if (!handler) {
      throw new Error(`no handler for ${pattern}`);
    }
    return lastValueFrom(this.transformToObservable(await handler(data, new BaseRpcContext([data]))), { defaultValue: undefined });
  }
}

/** Boots the module as an application on HTTP and the in-process transport, with no database. */
async function startApp(moduleRef: TestingModule): Promise<{ app: INestApplication; transport: InProcessTransport }> {
  const app = moduleRef.createNestApplication({ logger: false });
  const transport = new InProcessTransport();
  app.connectMicroservice({ strategy: transport });
  await app.startAllMicroservices();
  await app.init();
  return { app, transport };
}

describe('unit tests of controllers with @IdempotentHandler(), without a database', () => {
  const apps: INestApplication[] = [];

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  it('without a stand-in for IdempotencyModule, the testing module does not compile: the interceptor has no dependencies', async () => {
    const fake = fakePayments();
    await expect(
      Test.createTestingModule({
        controllers: [PaymentsController],
        providers: [{ provide: PaymentsService, useValue: fake.service }],
      }).compile(),
    ).rejects.toThrow(/Nest can't resolve dependencies of the IdempotencyInterceptor/);
  });

  it('a worker method its framework calls without interceptors (a BullMQ process) does not compile without a stand-in either', async () => {
    const fake = fakePayments();
    await expect(
      Test.createTestingModule({ providers: [SettlementWorker, { provide: PaymentsService, useValue: fake.service }] }).compile(),
    ).rejects.toThrow(/Nest can't resolve dependencies of the IdempotencyInterceptor/);
  });

  describe('with IdempotencyTestingModule', () => {
    const compile = (fake: ReturnType<typeof fakePayments>, options?: Parameters<typeof IdempotencyTestingModule.forRoot>[0]) =>
      Test.createTestingModule({
        imports: [IdempotencyTestingModule.forRoot(options)],
        controllers: [PaymentsController, LedgerController],
        providers: [{ provide: PaymentsService, useValue: fake.service }],
      }).compile();

    it('a worker method its framework calls without interceptors (a BullMQ process) runs once per call', async () => {
      const fake = fakePayments();
      const moduleRef = await Test.createTestingModule({
        imports: [IdempotencyTestingModule.forRoot()],
        providers: [SettlementWorker, { provide: PaymentsService, useValue: fake.service }],
      }).compile();
      await moduleRef.init();
      const worker = moduleRef.get(SettlementWorker);
      await expect(worker.process({ data: { orderId: 'o-7' } })).resolves.toBe('settled');
      await expect(worker.process({ data: { orderId: 'o-7' } })).resolves.toBe('settled');
      expect(fake.settled).toEqual(['o-7', 'o-7']);
      await moduleRef.close();
    });

    it('Outbox is a TestingOutbox: what a handler publishes is kept in order, nothing is written or sent; an id published before is refused, as the table refuses it', async () => {
      const moduleRef = await Test.createTestingModule({ imports: [IdempotencyTestingModule.forRoot()], controllers: [RefundsController] }).compile();
      const controller = moduleRef.get(RefundsController);
      await expect(controller.refund({ orderId: 'o-9' })).resolves.toEqual({ id: 'refund-o-9' });
      await expect(controller.refund({ orderId: 'o-10' })).resolves.toEqual({ id: 'refund-o-10' });
      await expect(controller.refund({ orderId: 'o-9' })).rejects.toThrow(IdempotencyOutboxError);
      await expect(controller.refund({ orderId: 'o-9' })).rejects.toThrow(/the id 'refund-o-9' was written already/);
      const outbox = moduleRef.get(Outbox);
      expect(outbox).toBeInstanceOf(TestingOutbox);
      expect((outbox as TestingOutbox).published).toEqual([
        { to: 'rabbitmq', address: 'refunds', pattern: 'refund.issued', payload: { orderId: 'o-9' }, id: 'refund-o-9' },
        { to: 'rabbitmq', address: 'refunds', pattern: 'refund.issued', payload: { orderId: 'o-10' }, id: 'refund-o-10' },
      ]);
    });

    it('the controller method called directly runs the fake service', async () => {
      const fake = fakePayments();
      const controller = (await compile(fake)).get(PaymentsController);

      await expect(controller.charge({ orderId: 'o-1', cents: 500 })).resolves.toEqual({ chargeId: 'ch_1' });
      await controller.settled({ id: 'evt-1', orderId: 'o-1' });

      expect(fake.charges).toEqual([{ orderId: 'o-1', cents: 500 }]);
      expect(fake.settled).toEqual(['o-1']);
    });

    it('an HTTP request runs the handler once per request: the same key twice runs it twice, nothing is replayed', async () => {
      const fake = fakePayments();
      const { app } = await startApp(await compile(fake));
      apps.push(app);

      const first = await request(app.getHttpServer()).post('/payments').set('Idempotency-Key', 'k-1').send({ orderId: 'o-2', cents: 700 });
      const again = await request(app.getHttpServer()).post('/payments').set('Idempotency-Key', 'k-1').send({ orderId: 'o-2', cents: 700 });
      const keyless = await request(app.getHttpServer()).post('/payments').send({ orderId: 'o-3', cents: 100 });

      expect([first.status, again.status, keyless.status]).toEqual([201, 201, 201]);
      expect([first.body, again.body, keyless.body]).toEqual([{ chargeId: 'ch_1' }, { chargeId: 'ch_2' }, { chargeId: 'ch_3' }]);
      expect(again.headers['idempotent-replayed']).toBeUndefined();
      expect(fake.charges).toHaveLength(3);
    });

    it('an @EventPattern handler runs through the interceptor once per delivery', async () => {
      const fake = fakePayments();
      const { app, transport } = await startApp(await compile(fake));
      apps.push(app);

      await transport.deliver('payment.settled', { id: 'evt-2', orderId: 'o-4' });
      await transport.deliver('payment.settled', { id: 'evt-2', orderId: 'o-4' });

      expect(fake.settled).toEqual(['o-4', 'o-4']);
    });

    it('IdempotencyContext answers fixed test values, in a request and in a direct call', async () => {
      const fake = fakePayments();
      const moduleRef = await compile(fake);
      const { app } = await startApp(moduleRef);
      apps.push(app);

      const answer = await request(app.getHttpServer()).post('/ledger/claim').send({});
      expect(answer.status).toBe(201);
      expect(answer.body).toEqual({
        isActive: true,
        key: 'test-key',
        consumer: 'test-consumer',
        sender: 'test-sender',
        downstreamKey: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      expect(moduleRef.get(LedgerController).claim()).toEqual(answer.body);

      const chosen = await compile(fake, { key: 'pay-1', consumer: 'payments', sender: 'stripe', downstreamKey: 'dk-1' });
      expect(chosen.get(LedgerController).claim()).toEqual({ isActive: true, key: 'pay-1', consumer: 'payments', sender: 'stripe', downstreamKey: 'dk-1' });
      // Derived from consumer and key, as the module derives it: another key, another downstream key.
      const otherKey = await compile(fake, { key: 'pay-2', consumer: 'payments' });
      const sameKey = await compile(fake, { key: 'pay-2', consumer: 'payments' });
      expect(otherKey.get(LedgerController).claim().downstreamKey).not.toBe(answer.body.downstreamKey);
      expect(otherKey.get(LedgerController).claim().downstreamKey).toBe(sameKey.get(LedgerController).claim().downstreamKey);
    });

    it('IdempotencyContext.manager is the manager given to forRoot', async () => {
      const inserted: { target: unknown; values: unknown }[] = [];
      const manager = {
        insert: async (target: unknown, values: unknown) => {
          inserted.push({ target, values });
          return { identifiers: [], generatedMaps: [], raw: [] };
        },
      } as unknown as EntityManager;
      const moduleRef = await compile(fakePayments(), { manager });
      const { app } = await startApp(moduleRef);
      apps.push(app);

      expect((await request(app.getHttpServer()).post('/ledger').send({ account: 'a-1', cents: 5 })).status).toBe(201);
      await moduleRef.get(LedgerController).record({ account: 'a-2', cents: 6 });

      expect(moduleRef.get(IdempotencyContext).manager).toBe(manager);
      expect(inserted).toEqual([
        { target: 'ledger_entries', values: { account: 'a-1', cents: 5 } },
        { target: 'ledger_entries', values: { account: 'a-2', cents: 6 } },
      ]);
    });

    it('without a manager, reading IdempotencyContext.manager throws an IdempotencyContextError that names the option', async () => {
      const moduleRef = await compile(fakePayments());
      const { app } = await startApp(moduleRef);
      apps.push(app);

      const controller = moduleRef.get(LedgerController);
      await expect(controller.record({ account: 'a-3', cents: 7 })).rejects.toThrow(IdempotencyContextError);
      await expect(controller.record({ account: 'a-3', cents: 7 })).rejects.toThrow(/IdempotencyTestingModule\.forRoot\(\{ manager \}\)/);
      expect((await request(app.getHttpServer()).post('/ledger').send({ account: 'a-3', cents: 7 })).status).toBe(500);
    });
  });

  it('overrideInterceptor(IdempotencyInterceptor) compiles without the module, and its stand-in sees HTTP and message deliveries', async () => {
    const fake = fakePayments();
    const seen: string[] = [];
    const moduleRef = await Test.createTestingModule({
      controllers: [PaymentsController],
      providers: [{ provide: PaymentsService, useValue: fake.service }],
    })
      .overrideInterceptor(IdempotencyInterceptor)
      .useValue({
        intercept: (context: ExecutionContext, next: CallHandler) => {
          seen.push(`${context.getType()} ${context.getHandler().name}`);
          return next.handle();
        },
      })
      .compile();
    const { app, transport } = await startApp(moduleRef);
    apps.push(app);

    expect((await request(app.getHttpServer()).post('/payments').send({ orderId: 'o-5', cents: 900 })).body).toEqual({ chargeId: 'ch_1' });
    await transport.deliver('payment.settled', { id: 'evt-3', orderId: 'o-5' });
    await expect(moduleRef.get(PaymentsController).charge({ orderId: 'o-6', cents: 1 })).resolves.toEqual({ chargeId: 'ch_2' });

    expect(seen).toEqual(['http charge', 'rpc settled']);
    expect(fake.charges).toEqual([
      { orderId: 'o-5', cents: 900 },
      { orderId: 'o-6', cents: 1 },
    ]);
    expect(fake.settled).toEqual(['o-5']);
  });
});
