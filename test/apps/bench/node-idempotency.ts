// @node-idempotency/nestjs, the peer the bench compares the module with, loaded from its own bench
// package (bench/peer: its own package.json and lock file, installed by the run), so it is no
// dependency of the project. It declares NestJS 9 or 10 as peers; bench/peer/.npmrc installs it
// with legacy-peer-deps, so npm installs no Nest of its own there and its `require('@nestjs/…')`
// finds the project's Nest 12 (an ES module, which `require` loads as the very instance the
// app imports: one Nest). Its types stay out of the project's compilation, which runs before the
// bench installs it: the part the bench uses is typed here.
import type { DynamicModule } from '@nestjs/common';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** The options of `NodeIdempotencyModule.forRootAsync` the bench sets (`IdempotencyPluginOptions`). */
interface PeerOptions {
  storage: { adapter: 'redis'; options: { url: string } };
  /** The first part of every Redis key: `<prefix>:<method>:<path>:<Idempotency-Key>`. */
  cacheKeyPrefix: string;
}

/** What the bench uses of `@node-idempotency/nestjs`. */
interface NodeIdempotencyNestjs {
  NodeIdempotencyModule: { forRootAsync(options: PeerOptions): DynamicModule };
  /** Puts its interceptor on a route: claim in Redis before the handler, the response written there after it. */
  Idempotent(): MethodDecorator;
}

/** bench/peer/package.json, from the compiled file's place in `dist/test/apps/bench/`. */
const PEER_PACKAGE = fileURLToPath(new URL('../../../../bench/peer/package.json', import.meta.url));

/** `@node-idempotency/nestjs` as installed in bench/peer. */
export const nodeIdempotency = createRequire(PEER_PACKAGE)('@node-idempotency/nestjs') as NodeIdempotencyNestjs;
