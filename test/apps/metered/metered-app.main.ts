import 'reflect-metadata';
import { Controller, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { InjectMetric, makeCounterProvider, PrometheusModule } from '@willsoto/nestjs-prometheus';
import { CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000, CreateProcessedMessagesTable1764633600000, IdempotencyModule, IdempotentHandler } from 'nestjs-idempotent-consumer';
import type { Counter } from 'prom-client';

@Controller('orders')
class OrdersController {
  constructor(@InjectMetric('orders_received_total') private readonly received: Counter) {}

  @Post()
  @IdempotentHandler()
  place() {
    this.received.inc();
    return { placed: true };
  }
}

/** A service that serves /metrics already, with @willsoto/nestjs-prometheus and a counter of its own, adopting the module. */
@Module({
  imports: [
    PrometheusModule.register({ defaultMetrics: { enabled: false } }),
    TypeOrmModule.forRoot({ type: 'postgres', url: process.env.DATABASE_URL, migrations: [CreateProcessedMessagesTable1764633600000, CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000], migrationsRun: true }),
    IdempotencyModule.forRoot({ purge: { interval: false } }),
  ],
  controllers: [OrdersController],
  providers: [makeCounterProvider({ name: 'orders_received_total', help: 'Orders the handler received.' })],
})
class MeteredAppModule {}

const app = await NestFactory.create(MeteredAppModule, { logger: ['error', 'warn'] });
await app.listen(Number(process.env.PORT), '127.0.0.1');
