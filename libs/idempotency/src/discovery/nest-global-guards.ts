import { APP_GUARD, type ModulesContainer } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';

/**
 * The names of the guards an application registers with `{ provide: APP_GUARD, useClass }`, read
 * where Nest keeps them: each module lists such a guard among its providers (or its injectables,
 * when request-scoped) under a token of its own, `APP_GUARD (UUID: …)`. Guards given to
 * `app.useGlobalGuards()` are no providers, and are not seen.
 * @internal
 */
export function globalGuardNames(modules: ModulesContainer): string[] {
  const names: string[] = [];
  for (const module of modules.values()) {
    for (const wrapper of [...module.providers.values(), ...module.injectables.values()]) {
      if (typeof wrapper.token === 'string' && wrapper.token.startsWith(`${APP_GUARD} (`)) {
        names.push(guardName(wrapper));
      }
    }
  }
  return names;
}

function guardName(wrapper: InstanceWrapper): string {
  const instance: unknown = wrapper.isDependencyTreeStatic() ? wrapper.instance : undefined;
  const name = (typeof instance === 'object' && instance !== null ? instance.constructor.name : undefined) ?? wrapper.metatype?.name;
  return name && name !== 'Object' ? name : 'a global guard';
}
