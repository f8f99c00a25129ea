import { All, type CanActivate, Controller, Get, Head, Injectable, Logger, Module, Options, Post, Scope, Sse, type Type, UseGuards } from '@nestjs/common';
import { jest } from '@jest/globals';
import { APP_GUARD } from '@nestjs/core';
import { EventPattern } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { getDataSourceToken } from '@nestjs/typeorm';
import { IdempotentHandler } from '../decorators/idempotent-handler.decorator.js';
import { IdempotencyConsumerConflictError, IdempotencyOptionsError, IdempotencyRetentionError, IdempotencyUnsupportedHandlerError } from '../errors/idempotency.errors.js';
import { IdempotencyModule } from '../idempotency.module.js';
import type { IdempotencyModuleOptions } from '../idempotency.options.js';

@Controller('webhooks')
class WebhooksController {
  @Post('payments')
  @IdempotentHandler({ sender: 'payments', retention: '72h' })
  onPayment() {}

  @Post('shop')
  @IdempotentHandler({ sender: 'shop', retention: '1d' })
  onShopEvent() {}

  @Post('any')
  @IdempotentHandler({ sender: () => 'shop', retention: '5d' })
  onAnyEvent() {}

  @Post('plain')
  notIdempotent() {}
}

@Controller('first')
class FirstController {
  @Post()
  @IdempotentHandler({ consumer: 'orders' })
  handle() {}
}

@Controller('second')
class SecondController {
  @Post()
  @IdempotentHandler({ consumer: 'orders' })
  handle() {}
}

@Controller('dynamic')
class DynamicSenderController {
  @Post()
  @IdempotentHandler({ sender: () => 'payments', retention: '5d' })
  handle() {}
}

@Module({ controllers: [FirstController] })
class FirstModule {}

@Module({ controllers: [SecondController] })
class SecondModule {}

@Module({ controllers: [WebhooksController] })
class WebhooksModule {}

@Module({ controllers: [DynamicSenderController] })
class DynamicSenderModule {}

abstract class EventsBase {
  @Post()
  @IdempotentHandler({ key: { body: 'id' } })
  receive() {}
}
@Controller('provider-a')
class ProviderAController extends EventsBase {}
@Controller('provider-b')
class ProviderBController extends EventsBase {}
@Module({ controllers: [ProviderAController, ProviderBController] })
class InheritingModule {}

abstract class NamedBase {
  @Post()
  @IdempotentHandler({ consumer: 'events' })
  receive() {}
}
@Controller('named-a')
class NamedAController extends NamedBase {}
@Controller('named-b')
class NamedBController extends NamedBase {}
@Module({ controllers: [NamedAController, NamedBController] })
class NamedInheritingModule {}

@Controller('stream')
class StreamController {
  @Sse('events')
  @IdempotentHandler()
  events() {}
}
@Module({ controllers: [StreamController] })
class StreamModule {}

@Injectable()
class CreditsResolver {
  @IdempotentHandler()
  grantCredit() {}
}
@Module({ providers: [CreditsResolver] })
class ResolverModule {}

@Controller('leased')
class LeaseStoreController {
  @Post('redis')
  @IdempotentHandler({ mode: 'lease', store: 'redis' })
  onRedis() {}
}
@Module({ controllers: [LeaseStoreController] })
class LeaseStoreModule {}

@Controller('transactional-on-redis')
class TransactionalOnRedisController {
  @Post()
  @IdempotentHandler({ store: 'redis' })
  handle() {}
}
@Module({ controllers: [TransactionalOnRedisController] })
class TransactionalOnRedisModule {}

@Controller('ledger')
class LedgerEventsController {
  @EventPattern('credit.granted')
  @IdempotentHandler()
  record(event: unknown) {
    return event;
  }
}
@Controller('mail')
class MailEventsController {
  @EventPattern('credit.granted')
  @IdempotentHandler()
  notify(event: unknown) {
    return event;
  }
}
@Module({ controllers: [LedgerEventsController, MailEventsController] })
class FanOutModule {}

const redisStore = { claim: async () => ({ kind: 'claimed' as const, tookOver: false }), complete: async () => true, release: async () => true, extend: async () => true };

@Injectable()
class SessionGuard implements CanActivate {
  canActivate() {
    return true;
  }
}
@Injectable()
class AdminGuard implements CanActivate {
  canActivate() {
    return true;
  }
}

@Controller('orders')
@UseGuards(SessionGuard)
class GuardedOrdersController {
  @Post()
  @IdempotentHandler()
  place() {}

  @Post('admin')
  @UseGuards(AdminGuard)
  @IdempotentHandler()
  placeAsAdmin() {}

  @Post('scoped')
  @IdempotentHandler({ scope: () => 'caller' })
  placeScoped() {}

  @Post('shared')
  @IdempotentHandler({ scope: false })
  placeShared() {}

  @Post('webhook')
  @IdempotentHandler({ key: { body: 'id' } })
  receive() {}
}
@Module({ controllers: [GuardedOrdersController] })
class GuardedOrdersModule {}

@Controller('open-orders')
class OpenOrdersController {
  @Post()
  @IdempotentHandler()
  place() {}
}
@Module({ controllers: [OpenOrdersController] })
class OpenOrdersModule {}
@Module({ controllers: [OpenOrdersController], providers: [{ provide: APP_GUARD, useClass: SessionGuard }] })
class GloballyGuardedOrdersModule {}
@Module({ controllers: [OpenOrdersController], providers: [{ provide: APP_GUARD, useClass: AdminGuard, scope: Scope.REQUEST }] })
class RequestGuardedOrdersModule {}

/** The catalogue of a store in the current shape, the one query the start-up makes. */
const currentStore = {
  tableFound: true,
  columns: ['consumer', 'message_id', 'sender', 'fingerprint', 'response_status', 'response_headers', 'response_body', 'processed_at', 'expires_at', 'lease_token', 'lease_expires_at'].map(
    (name) => ({ name, type: name === 'response_body' ? 'bytea' : 'text', notNull: false }),
  ),
  claimFound: true,
  recordFound: true,
};

/** A stand-in for the data source that answers the schema check's catalogue query and the start-up scan of stored consumer names (none). */
const catalogueOnlyDataSource = {
  options: { type: 'postgres' },
  createQueryRunner: () => ({
    query: (sql: string) => Promise.resolve({ records: sql.includes('RECURSIVE') ? [] : [currentStore] }),
    release: () => Promise.resolve(),
  }),
};

/** Starts a module with `imports`, without a database: the explorer needs none, the schema check a catalogue of the current store. */
async function start(options: IdempotencyModuleOptions, imports: Type[]): Promise<void> {
  const moduleRef = await Test.createTestingModule({
    imports: [IdempotencyModule.forRoot({ purge: { interval: false }, ...options }), ...imports],
    // The start-up scan of stored consumer names finds none.
    providers: [{ provide: getDataSourceToken(), useValue: catalogueOnlyDataSource }],
  }).compile();
  await moduleRef.init();
  await moduleRef.close();
}

describe('IdempotencyExplorer', () => {
  it("starts when every handler's retention covers its sender's horizon", async () => {
    const senders = { payments: { redeliveryHorizon: '3d' }, shop: { redeliveryHorizon: '4h' } } as const;
    await expect(start({ senders }, [WebhooksModule])).resolves.toBeUndefined();
  });

  it('starts when no sender is declared', async () => {
    await expect(start({}, [WebhooksModule])).resolves.toBeUndefined();
  });

  it("refuses to start when a handler's retention is shorter than its sender's horizon, naming both", async () => {
    const error = await start({ senders: { payments: { redeliveryHorizon: '4d' } } }, [WebhooksModule]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(IdempotencyRetentionError);
    expect((error as Error).message).toBe(
      "WebhooksController.onPayment keeps message ids for 3d, less than the redelivery horizon of its sender 'payments' (4d): " +
        "a redelivery after 3d would be processed again. Set retention: '4d' or longer on the handler.",
    );
  });

  it('carries the handler, the sender and both durations on the error', async () => {
    const error = await start({ senders: { shop: { redeliveryHorizon: '36h' } } }, [WebhooksModule]).catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      name: 'IdempotencyRetentionError',
      handler: 'WebhooksController.onShopEvent',
      retention: '1d',
      sender: 'shop',
      redeliveryHorizon: '36h',
    });
  });

  it('checks a handler that chooses its sender per message against the longest declared horizon', async () => {
    const senders = { payments: { redeliveryHorizon: '6d' }, shop: { redeliveryHorizon: '1h' } } as const;
    const error = await start({ senders }, [DynamicSenderModule]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(IdempotencyRetentionError);
    expect((error as Error).message).toBe(
      "DynamicSenderController.handle keeps message ids for 5d and chooses its sender per message, so it must outlast the " +
        "longest redelivery horizon declared, that of 'payments' (6d). Set retention: '6d' or longer on the handler.",
    );
    await expect(start({ senders: { payments: { redeliveryHorizon: '5d' } } }, [DynamicSenderModule])).resolves.toBeUndefined();
  });

  it('refuses to start when two handlers claim the same consumer name, naming both', async () => {
    const error = await start({}, [FirstModule, SecondModule]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(IdempotencyConsumerConflictError);
    expect(error).toMatchObject({
      consumer: 'orders',
      handlers: ['FirstController.handle (in FirstModule)', 'SecondController.handle (in SecondModule)'],
    });
    expect((error as Error).message).toMatch(/Give each its own name with @IdempotentHandler\(\{ consumer \}\)/);
  });

  it('counts a controller registered in two modules once', async () => {
    @Module({ controllers: [FirstController] })
    class FirstAgainModule {}
    await expect(start({}, [FirstModule, FirstAgainModule])).resolves.toBeUndefined();
  });

  it('resolves a method inherited by two controllers once per controller, so each has its own consumer', async () => {
    await expect(start({}, [InheritingModule])).resolves.toBeUndefined();
  });

  it('sees the consumer name an inherited method shares between its controllers, and refuses it', async () => {
    const error = await start({}, [NamedInheritingModule]).catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      name: 'IdempotencyConsumerConflictError',
      consumer: 'events',
      handlers: ['NamedAController.receive (in NamedInheritingModule)', 'NamedBController.receive (in NamedInheritingModule)'],
    });
  });

  it('refuses an @Sse() stream, which cannot be replayed, naming it', async () => {
    const error = await start({}, [StreamModule]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(IdempotencyUnsupportedHandlerError);
    expect(error).toMatchObject({ handler: 'StreamController.events' });
    expect((error as Error).message).toMatch(/cannot be recorded and replayed/);
  });

  it('refuses a decorated method of a provider no transport delivers to (a gateway), naming it', async () => {
    const error = await start({}, [ResolverModule]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(IdempotencyUnsupportedHandlerError);
    expect((error as Error).message).toMatch(/^CreditsResolver.grantCredit has @IdempotentHandler\(\) but is neither a controller's method nor a handler of a supported message consumer/);
  });

  it('refuses a handler whose lease store is not configured, naming the stores there are', async () => {
    const error = await start({}, [LeaseStoreModule]).catch((caught: unknown) => caught);
    expect((error as Error).message).toBe(
      "LeaseStoreController.onRedis uses the lease store 'redis', which is not configured; the stores are 'postgres'. Add it to the module's stores: { redis: ... }.",
    );
    await expect(start({ stores: { redis: redisStore } }, [LeaseStoreModule])).resolves.toBeUndefined();
  });

  it('refuses a store other than PostgreSQL for the transactional mode, naming the handler', async () => {
    const error = await start({ stores: { redis: redisStore } }, [TransactionalOnRedisModule]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(IdempotencyOptionsError);
    expect((error as Error).message).toMatch(/^TransactionalOnRedisController.handle runs in the transactional mode.*its store is 'redis'. Set mode: 'lease'/);
  });

  it('refuses two handlers of one event pattern that both default to its name, suggesting their former names', async () => {
    const error = await start({}, [FanOutModule]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(IdempotencyConsumerConflictError);
    expect(error).toMatchObject({ consumer: 'credit.granted' });
    expect((error as Error).message).toMatch(/use their former names \('LedgerEventsController.record', 'MailEventsController.notify'\)/);
  });

  it("starts with a 5xx in a handler's recordErrors; refuses one in the module's, saying where it goes", async () => {
    @Controller('charges')
    class ChargesController {
      @Post()
      @IdempotentHandler({ recordErrors: [402, 502] })
      charge() {}
    }
    @Module({ controllers: [ChargesController] })
    class ChargesModule {}
    await expect(start({}, [ChargesModule])).resolves.toBeUndefined();
    const moduleError = await start({ recordErrors: [500] }, [OpenOrdersModule]).catch((caught: unknown) => caught);
    expect(moduleError).toBeInstanceOf(IdempotencyOptionsError);
    expect((moduleError as Error).message).toMatch(/^recordErrors lists 500, a server error: .* list a 5xx in the recordErrors of the handler whose 5xx is final/);
  });

  describe('routes keyed by the client without a scope, behind a guard', () => {
    const unscopedWarnings = async (options: IdempotencyModuleOptions, imports: Type[]) => {
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      try {
        await start(options, imports);
        return warn.mock.calls.map(([message]) => String(message)).filter((message) => message.includes('but has no scope'));
      } finally {
        warn.mockRestore();
      }
    };
    const advice =
      "two callers who send the same key share one record, and the second is answered the first one's response. Set " +
      "`scope: (context) => context.switchToHttp().getRequest().user?.id` on the handler (or the module's `scope`; a caller " +
      'who is not signed in is then an anonymous one), or `scope: false` if one namespace for every caller is meant.';

    it("are warned about at start-up, once each, naming the handler and its controller's and method's guards", async () => {
      expect(await unscopedWarnings({}, [GuardedOrdersModule])).toEqual([
        `GuardedOrdersController.place (POST /orders) is keyed by the client's Idempotency-Key header and guarded by SessionGuard, but has no scope: ${advice}`,
        `GuardedOrdersController.placeAsAdmin (POST /orders/admin) is keyed by the client's Idempotency-Key header and guarded by SessionGuard, AdminGuard, but has no scope: ${advice}`,
      ]);
    });

    it('are warned about behind a guard registered with APP_GUARD, static or request-scoped', async () => {
      expect(await unscopedWarnings({}, [GloballyGuardedOrdersModule])).toEqual([expect.stringMatching(/^OpenOrdersController.place \(POST \/open-orders\) .* guarded by SessionGuard, but has no scope/)]);
      expect(await unscopedWarnings({}, [RequestGuardedOrdersModule])).toEqual([expect.stringMatching(/^OpenOrdersController.place .* guarded by AdminGuard, but has no scope/)]);
    });

    it('are not warned about with a scope (their own or the module\'s), with scope: false, keyed by the body, or with no guard', async () => {
      expect(await unscopedWarnings({}, [OpenOrdersModule])).toEqual([]);
      expect(await unscopedWarnings({ scope: () => 'caller' }, [GuardedOrdersModule])).toEqual([]);
    });
  });

  it.each([
    ['GET', Get],
    ['HEAD', Head],
    ['OPTIONS', Options],
    ['ALL', All],
  ])('refuses @IdempotentHandler() on a %s route, naming the handler', async (method, route) => {
    @Controller('reports')
    class ReportsController {
      @route()
      @IdempotentHandler()
      latest() {}
    }
    @Module({ controllers: [ReportsController] })
    class ReportsModule {}
    const error = await start({}, [ReportsModule]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(IdempotencyUnsupportedHandlerError);
    expect((error as Error).message).toBe(
      `ReportsController.latest has @IdempotentHandler() on a ${method} route: a safe method needs no key, and a recorded answer would be ` +
        'replayed stale for the whole retention. Put @IdempotentHandler() on the POST, PUT, PATCH or DELETE routes that change state.',
    );
  });
});
