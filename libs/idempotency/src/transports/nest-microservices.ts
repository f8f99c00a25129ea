import { loadIfInstalled } from '../optional/load-optional-package.js';

/** `@nestjs/microservices`, which only an application that receives messages through it installs. */
export type NestMicroservices = typeof import('@nestjs/microservices');

/** The injection token of `@nestjs/microservices`, or undefined where it is not installed. */
export const NEST_MICROSERVICES = Symbol('NEST_MICROSERVICES');

/**
 * Loads `@nestjs/microservices` once at boot when installed, so the adapters of its transports read
 * their contexts without waiting. Provided as a plain object of its exports: a module namespace has
 * no prototype, which explorers that read every provider's `constructor` (`@nestjs/graphql`'s) fail on.
 */
export const nestMicroservicesProvider = {
  provide: NEST_MICROSERVICES,
  useFactory: async (): Promise<NestMicroservices | undefined> => {
    const microservices = await loadIfInstalled(() => import('@nestjs/microservices'));
    return microservices && { ...microservices };
  },
};
