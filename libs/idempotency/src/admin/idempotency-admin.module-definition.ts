import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { IdempotencyAdminModuleOptions } from './idempotency-admin.options.js';

/** The token of the options given to `IdempotencyAdminModule.forRoot()` / `forRootAsync()`. @internal */
export const ADMIN_MODULE_OPTIONS_TOKEN = 'IDEMPOTENCY:ADMIN_MODULE_OPTIONS';

export const { ConfigurableModuleClass: ConfigurableAdminModuleClass, OPTIONS_TYPE: ADMIN_OPTIONS_TYPE } = new ConfigurableModuleBuilder<IdempotencyAdminModuleOptions>({
  moduleName: 'IdempotencyAdmin',
  optionsInjectionToken: ADMIN_MODULE_OPTIONS_TOKEN,
})
  .setClassMethodName('forRoot')
  .build();
