import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { HANDLER_OPTIONS_METADATA } from '../decorators/idempotency-metadata.constants.js';
import { enlistProviderCalls, registerEnlister } from '../transports/provider-calls.js';

/**
 * Under `IdempotencyTestingModule`, lets every idempotent provider handler (a BullMQ processor's
 * `process`, say) run once per call, as a unit test calls it.
 * @internal
 */
@Injectable()
export class PassThroughProviderCalls implements OnModuleDestroy {
  private readonly unregister: () => void;

  constructor(discovery: DiscoveryService, scanner: MetadataScanner) {
    this.unregister = registerEnlister(() => {
      for (const { instance } of discovery.getProviders()) {
        const prototype = (instance as object | undefined)?.constructor?.prototype as Record<string, object> | undefined;
        for (const method of prototype ? scanner.getAllMethodNames(prototype) : []) {
          if (Reflect.getMetadata(HANDLER_OPTIONS_METADATA, prototype![method]) !== undefined) {
            enlistProviderCalls(instance as object, method, (_args, run) => run());
          }
        }
      }
    });
  }

  onModuleDestroy(): void {
    this.unregister();
  }
}
