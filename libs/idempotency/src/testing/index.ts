export { IdempotencyTestingModule } from './idempotency-testing.module.js';
export type { IdempotencyTestingOptions } from './idempotency-testing.options.js';
export { TestingOutbox } from './testing-outbox.js';
export { leaseStoreContract } from './lease-store.contract.js';
export type { ContractCheck } from './lease-store.contract.js';
export { transportContract } from './transport.contract.js';
export type { ContractConsumer, ContractExtras, ContractMessage, ContractStart, TransportHarness } from './transport.contract.js';
