import { Injectable } from '@nestjs/common';
import { loadOptionalPackage } from '../../optional/load-optional-package.js';

/** `@golevelup/nestjs-rabbitmq`, which only an application that consumes RabbitMQ through it installs. */
export type GolevelupRabbitmq = typeof import('@golevelup/nestjs-rabbitmq');

/**
 * `@golevelup/nestjs-rabbitmq`, loaded at start-up only when an idempotent handler is one of its
 * subscriptions (it `require()`s the ESM-only Nest 12, which a test runner without `require(esm)`
 * cannot do: an application that does not use it must not load it).
 * @internal
 */
@Injectable()
export class GolevelupRabbitmqPackage {
  /** The package, once `load()` ran; undefined in an application without golevelup handlers. */
  loaded: GolevelupRabbitmq | undefined;

  async load(): Promise<GolevelupRabbitmq> {
    this.loaded ??= await loadOptionalPackage('@golevelup/nestjs-rabbitmq', '@RabbitSubscribe handlers', () => import('@golevelup/nestjs-rabbitmq'));
    return this.loaded;
  }
}
