import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { IdempotencyModuleOptions } from './idempotency.options.js';

/** The token of the options given to `forRoot()` / `forRootAsync()`. @internal */
export const MODULE_OPTIONS_TOKEN = 'IDEMPOTENCY:MODULE_OPTIONS';

export const { ConfigurableModuleClass, OPTIONS_TYPE, ASYNC_OPTIONS_TYPE } =
  new ConfigurableModuleBuilder<IdempotencyModuleOptions>({ moduleName: 'Idempotency', optionsInjectionToken: MODULE_OPTIONS_TOKEN })
    .setClassMethodName('forRoot')
    .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
    .build();
