/** The message texts of IdempotencyContext. */
export const contextMessages = {
  noClaimTransactionInLeaseMode: (consumer: string) =>
    `${consumer} runs in lease mode, which holds no claim transaction: IdempotencyContext.manager has none to give. ` +
    'Write through your own transactions, and call other services with IdempotencyContext.downstreamKey.',
  noLeaseInTransactionalMode: (consumer: string) =>
    `${consumer} runs in the transactional mode, which holds no lease to extend: set mode: 'lease' on the handler to hold one.`,
};
