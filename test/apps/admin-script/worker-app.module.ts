import { RabbitMQModule, RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { BullModule, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { Job } from 'bullmq';
import {
  CreateProcessedMessagesFunctions1796256000000,
  CreateProcessedMessagesTable1764633600000,
  IdempotencyContext,
  IdempotencyModule,
  IdempotentHandler,
  UpgradeProcessedMessagesTable1796342400000,
} from 'nestjs-idempotent-consumer';
import { createClient, type RedisClientType } from 'redis';
import type { MigrationInterface, QueryRunner } from 'typeorm';
import { idempotencyOptions, WORKER_QUEUES } from './worker.options.js';

/** The worker's own migration, pending until a context of its AppModule runs the migrations. */
export class AddWorkerEffectNote1796500000000 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE worker_effects ADD COLUMN note text');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE worker_effects DROP COLUMN note');
  }
}

@Processor(WORKER_QUEUES.jobs)
export class WorkerJobsProcessor extends WorkerHost {
  constructor(private readonly idempotency: IdempotencyContext) {
    super();
  }

  @IdempotentHandler()
  async process(job: Job<{ id: string }>) {
    await this.idempotency.manager.query(`INSERT INTO worker_effects (source, key) VALUES ('bullmq', $1)`, [job.data.id]);
  }
}

@Injectable()
export class WorkerMessagesConsumer {
  constructor(private readonly idempotency: IdempotencyContext) {}

  @RabbitSubscribe({ queue: WORKER_QUEUES.messages, queueOptions: { durable: false } })
  @IdempotentHandler({ key: { body: 'id' } })
  async handle(message: { id: string }): Promise<void> {
    await this.idempotency.manager.query(`INSERT INTO worker_effects (source, key) VALUES ('rabbitmq', $1)`, [message.id]);
  }
}

/**
 * A worker's AppModule: the store with the migrations run at start, a BullMQ processor and a
 * golevelup subscription, and no HTTP route. BullMQ takes a node-redis client here (its own
 * options need ioredis, which the project does not install).
 */
@Module({
  imports: [
    TypeOrmModule.forRoot({
      type: 'postgres',
      url: process.env.DATABASE_URL,
      migrations: [CreateProcessedMessagesTable1764633600000, CreateProcessedMessagesFunctions1796256000000, UpgradeProcessedMessagesTable1796342400000, AddWorkerEffectNote1796500000000],
      migrationsRun: true,
    }),
    IdempotencyModule.forRoot(idempotencyOptions),
    BullModule.forRoot({ connection: createClient({ url: process.env.REDIS_URL }) as RedisClientType, prefix: WORKER_QUEUES.bullPrefix }),
    BullModule.registerQueue({ name: WORKER_QUEUES.jobs }),
    RabbitMQModule.forRoot({ uri: process.env.RABBITMQ_URL!, connectionInitOptions: { wait: true } }),
  ],
  providers: [WorkerJobsProcessor, WorkerMessagesConsumer],
})
export class WorkerAppModule {}
