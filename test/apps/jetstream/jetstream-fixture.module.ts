import { Controller, Get, Logger, Module } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { IdempotencyContext, IdempotentHandler } from 'nestjs-idempotent-consumer';

/**
 * One run of the JetStream suite: its stream, subjects and durable consumers carry it, so two runs
 * on one nats-server at once (CI's passes) never see each other's messages. The suite's processes
 * are told the suite's run in JETSTREAM_RUN.
 */
export const JETSTREAM_RUN = process.env.JETSTREAM_RUN ?? String(process.pid);
/** The stream and subjects of the JetStream suite, unique to it and to the run. */
export const JETSTREAM_STREAM = `IDEM_JETSTREAM_E2E_${JETSTREAM_RUN}`;
/** The first token of every subject of the suite's stream, which stores `<token>.>`. */
export const JETSTREAM_SUBJECT_TOKEN = `idem-jetstream-e2e-${JETSTREAM_RUN}`;
export const JETSTREAM_SUBJECTS = {
  credit: `${JETSTREAM_SUBJECT_TOKEN}.credit`,
  byPayload: `${JETSTREAM_SUBJECT_TOKEN}.by-payload`,
  poison: `${JETSTREAM_SUBJECT_TOKEN}.poison`,
  notIdempotent: `${JETSTREAM_SUBJECT_TOKEN}.not-idempotent`,
} as const;

/** What a test publishes: `hold` keeps the first process's handler busy after its write, until it is killed. */
interface Credit {
  readonly id: string;
  readonly hold?: boolean;
}

/** `@EventPattern` handlers on a durable JetStream consumer, each writing one effect row in the claim's transaction. */
@Controller()
export class JetStreamFixtureController {
  private readonly logger = new Logger('JetStreamFixture');

  constructor(private readonly idempotency: IdempotencyContext) {}

  /** Readiness, for the test that starts the process. */
  @Get('ping')
  ping() {
    return 'pong';
  }

  /** Keyed by the Nats-Msg-Id header (the default). */
  @EventPattern(JETSTREAM_SUBJECTS.credit)
  @IdempotentHandler()
  async credit(@Payload() payload: Credit) {
    await this.recordEffect('credit', payload.id);
    if (payload.hold && process.env.HOLD === 'true') {
      this.logger.log(`holding ${payload.id}`);
      await new Promise((resolve) => setTimeout(resolve, 600_000));
    }
  }

  /** Keyed by a payload field, for producers that publish one event several times under new message ids. */
  @EventPattern(JETSTREAM_SUBJECTS.byPayload)
  @IdempotentHandler({ key: { body: 'id' } })
  byPayload(@Payload() payload: Credit) {
    return this.recordEffect('by-payload', payload.id);
  }

  /** Writes its effect, then always throws. */
  @EventPattern(JETSTREAM_SUBJECTS.poison)
  @IdempotentHandler({ maxAttempts: 3, retryDelay: '100ms' })
  async poison(@Payload() payload: Credit) {
    await this.recordEffect('poison', payload.id);
    throw new Error('poison: this message can never be processed');
  }

  /** Not idempotent: ends its message, then throws, an error the module has no part in. */
  @EventPattern(JETSTREAM_SUBJECTS.notIdempotent)
  notIdempotent(@Payload() payload: Credit, @Ctx() context: unknown) {
    (context as { readonly message: { term(): void } }).message.term();
    throw new Error(`not idempotent: ${payload.id} failed`);
  }

  private async recordEffect(handler: string, key: string): Promise<void> {
    await this.idempotency.manager.query(`INSERT INTO effects (handler, key) VALUES ($1, $2)`, [handler, key]);
  }
}

@Module({ controllers: [JetStreamFixtureController] })
export class JetStreamFixtureModule {}
