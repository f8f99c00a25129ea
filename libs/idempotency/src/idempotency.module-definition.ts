import { ConfigurableModuleBuilder } from '@nestjs/common';
import { MODULE_OPTIONS_TOKEN } from './idempotency.internal-constants.js';
import type { IdempotencyModuleOptions } from './idempotency.options.js';

export const { ConfigurableModuleClass, OPTIONS_TYPE, ASYNC_OPTIONS_TYPE } =
  new ConfigurableModuleBuilder<IdempotencyModuleOptions>({ moduleName: 'Idempotency', optionsInjectionToken: MODULE_OPTIONS_TOKEN })
    .setClassMethodName('forRoot')
    .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
    .build();
