export { IdempotencyTestingModule } from './idempotency-testing.module.js';
export type { IdempotencyTestingOptions } from './idempotency-testing.options.js';
export { leaseStoreContract } from './lease-store.contract.js';
export type { ContractCheck } from './lease-store.contract.js';
