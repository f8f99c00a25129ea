import { Body, Controller, type DynamicModule, Get, HttpCode, Inject, Module, type ModuleMetadata, Param, Post, type Provider, type Type } from '@nestjs/common';
import { IdempotencyModule } from '../idempotency.module.js';
import type { IdempotencyDataLayer, TransactionStatements } from '../data-layers/data-layer.js';
import { IdempotentHandler } from '../decorators/idempotent-handler.decorator.js';
import { IdempotencyHealthIndicator } from '../health/idempotency.health.js';
import { Outbox } from '../outbox/outbox.js';
import type { OutboxPublisher, OutgoingMessage } from '../outbox/outbox-publisher.js';
import { IdempotencyPurgeService } from '../purge/idempotency-purge.service.js';
import { IdempotentRunner } from '../transports/run/idempotent-runner.js';

/** How a transaction of the layer's own, nested in the handler's, ends: `commit` keeps its write, `rollback` undoes it and the handler carries on. */
export type NestedEnding = 'commit' | 'rollback';

/**
 * One data layer's way of writing a credit, as a service on that layer writes: through the
 * application's own instance (or, where the layer hands the claim's transaction out instead, the
 * object the layer answers while a claim is open), into the contract's tables
 * `layer_credits (id bigserial PRIMARY KEY, account text NOT NULL, cents integer NOT NULL)` and
 * `gates (name text PRIMARY KEY)`, which `dataLayerContract()` creates.
 */
export interface DataLayerWriter {
  /** Inserts one credit row. */
  credit(account: string, cents: number): Promise<void>;
  /** Inserts one credit row in a transaction of the layer's own (`db.transaction()`), nested in the handler's, ended as `ending` says. */
  creditNested(account: string, cents: number, ending: NestedEnding): Promise<void>;
  /** Sends a bare COMMIT through the layer, as a handler that ends the transaction itself would. */
  commitItself(): Promise<void>;
  /** Inserts one credit row and answers its id. */
  creditReturningId(account: string, cents: number): Promise<string>;
  /** Whether the credit row `id` is visible, read as the layer reads one row by its key (Prisma: `findUnique`). */
  findCredit(id: string): Promise<boolean>;
  /** Locks the `gates` row `gate` (`SELECT ... FOR UPDATE`): it waits while the contract holds that row. */
  waitAtGate(gate: string): Promise<void>;
  /**
   * Runs `work` in a transaction of the layer's own, opened and committed (or, when `work` throws,
   * rolled back) as the service does, giving it how to run SQL in that transaction and how to
   * write a credit in it.
   */
  inOwnTransaction<T>(work: (statements: TransactionStatements, credit: (account: string, cents: number) => Promise<void>) => Promise<T>): Promise<T>;
}

/** What `DataLayerContractModule.register()` builds the contract's service from. */
export interface DataLayerContractOptions {
  /** The layer under test; unset: `TypeOrmDataLayer` on the default data source. */
  readonly dataLayer?: IdempotencyDataLayer;
  /** The writer of credits through the layer, provided and injected by the module. */
  readonly writer: Type<DataLayerWriter>;
  /** What the writer and the layer need: the module that provides the layer's instance (a pool, an ORM), global or exporting it. */
  readonly imports?: ModuleMetadata['imports'];
}

const WRITER = Symbol('IDEMPOTENCY:CONTRACT_WRITER');

/** The broker of the contract's service: it keeps the ids the relay sent it, for `GET /announced`. */
class RecordingPublisher implements OutboxPublisher {
  readonly sent: string[] = [];

  async publish(message: OutgoingMessage): Promise<void> {
    this.sent.push(message.id);
  }
}

interface CreditBody {
  cents: number;
  /** Publish `credit.granted` through the outbox after the write, with this id. */
  announce?: string;
  /** After the write, waits at each of these gates in turn (`DataLayerWriter.waitAtGate`). */
  gates?: string[];
  /** Then waits until another handler came to the same meeting (each holding the gates it took), and then at each of `gatesAfter`. */
  meeting?: string;
  gatesAfter?: string[];
  fail?: boolean;
  nested?: NestedEnding;
  /** Credits in transactions of the layer's own that run at once, ended as listed: the i-th writes cents × 10^(i+1). */
  parallel?: NestedEnding[];
  /** Credits written at once, each a statement of its own. */
  concurrent?: number;
  commitItself?: boolean;
}

/** `POST /credits/:account`: an idempotent credit written through the layer; the body says what else the handler does. */
@Controller()
class DataLayerContractController {
  /** The handlers waiting at each meeting, each with the id of its credit. */
  private readonly meetings = new Map<string, { id: string; met: (otherId: string) => void }>();

  constructor(
    @Inject(WRITER) private readonly writer: DataLayerWriter,
    private readonly purge: IdempotencyPurgeService,
    private readonly health: IdempotencyHealthIndicator,
    private readonly runner: IdempotentRunner,
    private readonly outbox: Outbox,
    private readonly announcements: RecordingPublisher,
  ) {}

  @Post('credits/:account')
  @IdempotentHandler()
  async credit(@Param('account') account: string, @Body() body: CreditBody) {
    await this.writer.credit(account, body.cents);
    if (body.nested) await this.writer.creditNested(account, body.cents * 100, body.nested);
    if (body.concurrent) await Promise.all(Array.from({ length: body.concurrent }, () => this.writer.credit(account, body.cents)));
    if (body.parallel) await Promise.all(body.parallel.map((ending, i) => this.writer.creditNested(account, body.cents * 10 ** (i + 1), ending)));
    for (const gate of body.gates ?? []) await this.writer.waitAtGate(gate);
    if (body.meeting) await this.meet(body.meeting, account);
    for (const gate of body.gatesAfter ?? []) await this.writer.waitAtGate(gate);
    if (body.commitItself) await this.writer.commitItself();
    if (body.announce) await this.outbox.publish({ to: 'recorder', address: 'credits', payload: { account, cents: body.cents }, id: body.announce });
    if (body.fail) throw new Error('the handler fails after its write');
    return { account, cents: body.cents, note: 'é ✓' };
  }

  /**
   * Two handlers that meet: each writes a credit, waits for the other's at `meeting`, and then,
   * both resuming in one tick, reads its own credit and the other's; neither commits before both
   * have read, so the other's is uncommitted when read.
   */
  @Post('meets/:account')
  @IdempotentHandler()
  async meets(@Param('account') account: string, @Body() body: { meeting: string }) {
    const id = await this.writer.creditReturningId(account, 1);
    const otherId = await this.meet(body.meeting, id);
    const [own, other] = await Promise.all([this.writer.findCredit(id), this.writer.findCredit(otherId)]);
    await this.meet(`${body.meeting} read`, id);
    return { own, other };
  }

  /** The same credit as work run by `IdempotentRunner.run()`, keyed by the body's `key` (a job's id, say). */
  @Post('runs/:account')
  @HttpCode(200)
  async runCredit(@Param('account') account: string, @Body() body: CreditBody & { key: string }) {
    try {
      const result = await this.runner.run({ consumer: 'layer-run', key: body.key }, async () => {
        await this.writer.credit(account, body.cents);
        if (body.fail) throw new Error('the work fails after its write');
        return { account, cents: body.cents, at: new Date(0) };
      });
      return { result };
    } catch (error) {
      return { error: (error as Error).name };
    }
  }

  /** An idempotent handler whose credit is work run by `run()` (a shared service's, say), keyed by the body's `key`; `fail`: the handler throws after it. */
  @Post('handler-runs/:account')
  @IdempotentHandler()
  async handlerRun(@Param('account') account: string, @Body() body: CreditBody & { key: string }) {
    const result = await this.runner.run({ consumer: 'layer-handler-run', key: body.key }, async () => {
      await this.writer.credit(account, body.cents);
      return { account, cents: body.cents };
    });
    if (body.fail) throw new Error('the handler fails after run()');
    return result;
  }

  /** The same credit run by `run()` in a transaction the service opened itself; `fail`: the service throws after it, rolling back its transaction. */
  @Post('runs-own/:account')
  @HttpCode(200)
  async runInOwnTransaction(@Param('account') account: string, @Body() body: CreditBody & { key: string }) {
    try {
      const result = await this.writer.inOwnTransaction(async (transaction, credit) => {
        const ran = await this.runner.run({ consumer: 'layer-run-own', key: body.key, transaction }, async () => {
          await credit(account, body.cents);
          return { account, cents: body.cents };
        });
        // With an ordering key: its statement takes the key's lock, through each layer's raw SQL.
        if (body.announce) await this.outbox.publish({ to: 'recorder', address: 'credits', payload: { account }, id: body.announce, orderingKey: account }, { transaction });
        if (body.fail) throw new Error('the service fails after run()');
        return ran;
      });
      return { result };
    } catch (error) {
      return { error: (error as Error).message };
    }
  }

  /** The same credit in lease mode, on the store of the layer. */
  @Post('leased/:account')
  @IdempotentHandler({ mode: 'lease', lease: '30s' })
  async leased(@Param('account') account: string, @Body() body: CreditBody) {
    await this.writer.credit(account, body.cents);
    return { account, cents: body.cents };
  }

  @Post('purge')
  @HttpCode(200)
  purgeNow() {
    return this.purge.purgeNow();
  }

  @Get('health')
  isHealthy() {
    return this.health.isHealthy();
  }

  @Get('announced')
  announced() {
    return this.announcements.sent;
  }

  /** Resolves when a second handler meets at `meeting`, to its credit's id; both resume in the same tick. */
  private meet(meeting: string, id: string): Promise<string> {
    return new Promise((met) => {
      const first = this.meetings.get(meeting);
      if (!first) {
        this.meetings.set(meeting, { id, met });
        return;
      }
      this.meetings.delete(meeting);
      first.met(id);
      met(first.id);
    });
  }
}

/**
 * The service `dataLayerContract()` drives: `IdempotencyModule` on the layer under test, and the
 * routes of the contract's checks, each writing through the given `DataLayerWriter`. Start it as
 * a process of its own (the contract SIGKILLs one mid-handler), listening on 127.0.0.1:
 *
 * ```ts
 * const app = await NestFactory.create(
 *   DataLayerContractModule.register({ dataLayer: new KnexDataLayer(KNEX), writer: KnexWriter, imports: [KnexModule] }),
 * );
 * await app.listen(Number(process.env.PORT), '127.0.0.1');
 * ```
 *
 * Its module options: retention `1h`, no scheduled purge (the contract purges through
 * `POST /purge`), and an outbox whose publisher `recorder` keeps what the relay sent.
 */
@Module({})
export class DataLayerContractModule {
  /** The contract's service on `options.dataLayer`. */
  static register(options: DataLayerContractOptions): DynamicModule {
    const announcements = new RecordingPublisher();
    const providers: Provider[] = [
      { provide: WRITER, useClass: options.writer },
      { provide: RecordingPublisher, useValue: announcements },
    ];
    return {
      module: DataLayerContractModule,
      imports: [
        ...(options.imports ?? []),
        IdempotencyModule.forRoot({
          dataLayer: options.dataLayer,
          purge: { interval: false },
          retention: '1h',
          outbox: { publishers: { recorder: announcements }, relay: { pollInterval: '1s' } },
        }),
      ],
      controllers: [DataLayerContractController],
      providers,
    };
  }
}
