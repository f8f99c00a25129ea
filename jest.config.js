import { availableParallelism } from 'node:os';

/**
 * Jest runs in native ESM mode (`node --experimental-vm-modules`): NestJS 12 ships ESM only.
 * `unit` holds the specs beside the library's source; `e2e` the suites in test/ that run against
 * a real PostgreSQL (and real brokers), prepared once by test/global-setup.js, and the few
 * `*.e2e-spec.ts` beside the source that check an internal against a real PostgreSQL.
 * The suites wait on brokers, servers and timers more than they compute, and each has a database,
 * queues and subjects of its own: two or more run side by side, also on two cores.
 */
const shared = {
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.json' }],
  },
};

export default {
  testTimeout: 180_000,
  maxWorkers: Math.max(2, availableParallelism() - 1),
  testSequencer: '<rootDir>/test/long-suites-first.sequencer.js',
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/libs/**/*.spec.ts', '<rootDir>/apps/**/*.spec.ts', '<rootDir>/test/*.spec.ts'] },
    {
      ...shared,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts', '<rootDir>/libs/**/*.e2e-spec.ts'],
      globalSetup: '<rootDir>/test/global-setup.js',
      globalTeardown: '<rootDir>/test/global-teardown.js',
    },
  ],
};
