import { type DynamicModule, Module } from '@nestjs/common';
import { nodeIdempotency } from './node-idempotency.js';
import { PeerController } from './peer.controller.js';

/**
 * The peer in the bench app: `@node-idempotency/nestjs` with its Redis storage on BENCH_REDIS_URL,
 * its keys under the run's BENCH_REDIS_PREFIX (whose keys the run deletes at its end), and the
 * credit route it guards, `POST /peer/credits`. Every bench process has it; only that route uses it.
 */
@Module({})
export class PeerModule {
  static register(): DynamicModule {
    const url = process.env.BENCH_REDIS_URL;
    const prefix = process.env.BENCH_REDIS_PREFIX;
    if (!url || !prefix) {
      throw new Error('BENCH_REDIS_URL and BENCH_REDIS_PREFIX are set by the bench runner (npm run bench)');
    }
    return {
      module: PeerModule,
      imports: [nodeIdempotency.NodeIdempotencyModule.forRootAsync({ storage: { adapter: 'redis', options: { url } }, cacheKeyPrefix: `${prefix}node-idempotency` })],
      controllers: [PeerController],
    };
  }
}
