export { leaseStoreContract } from './lease-store.contract.js';
export type { ContractCheck } from './lease-store.contract.js';
