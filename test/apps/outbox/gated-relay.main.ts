import 'reflect-metadata';
import { Controller, Get, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdempotencyModule, type OutboxPublisher, type OutgoingMessage, PgPoolDataLayer } from 'nestjs-idempotent-consumer';
import pg from 'pg';

/**
 * A relay (on the data layer LAYER names) whose broker confirms nothing until the test opens a
 * gate: its batch transaction stays open while the test does what it likes to the connection.
 * The test creates the tables. `GET /held`: the ids whose publish waits at the gate; `POST /gate`
 * opens it for good; `GET /published`: the ids confirmed, in order.
 */
class GatedBroker implements OutboxPublisher {
  readonly held: string[] = [];
  readonly published: string[] = [];
  private open!: () => void;
  private readonly opened = new Promise<void>((resolve) => (this.open = resolve));

  async publish(message: OutgoingMessage): Promise<void> {
    this.held.push(message.id);
    await this.opened;
    this.held.splice(this.held.indexOf(message.id), 1);
    this.published.push(message.id);
  }

  openGate(): void {
    this.open();
  }
}

const broker = new GatedBroker();

@Controller()
class GateController {
  @Get('ping')
  ping() {
    return 'pong';
  }

  @Get('held')
  held() {
    return broker.held;
  }

  @Get('published')
  published() {
    return broker.published;
  }

  @Post('gate')
  gate() {
    broker.openGate();
  }
}

/** LAYER: 'pg' (a pg Pool, PgPoolDataLayer) or 'typeorm' (the default data layer). */
const layer =
  process.env.LAYER === 'typeorm'
    ? { imports: [TypeOrmModule.forRoot({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 4 } })], options: {} }
    : { imports: [], options: { dataLayer: new PgPoolDataLayer({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 4 }) }) } };

@Module({
  imports: [
    ...layer.imports,
    IdempotencyModule.forRoot({
      ...layer.options,
      purge: { interval: false },
      outbox: { publishers: { gated: broker }, relay: { pollInterval: '200ms', retryDelay: '50ms', publishTimeout: '1m' } },
    }),
  ],
  controllers: [GateController],
})
class GatedRelayModule {}

const app = await NestFactory.create(GatedRelayModule, { logger: ['log', 'warn', 'error'] });
app.enableShutdownHooks();
await app.listen(Number(process.env.PORT), '127.0.0.1');
