/** The message texts of IdempotencyContext. */
export const contextMessages = {
  noClaimTransactionInLeaseMode: (consumer: string, accessor: string) =>
    `${consumer} runs in lease mode, which holds no claim transaction: IdempotencyContext.${accessor} has none to give. ` +
    'Write through your own transactions, and call other services with IdempotencyContext.downstreamKey.',
  inCallersTransaction: (consumer: string, accessor: string) =>
    `${consumer} claims in a transaction of your own (run() given transaction), for which the module holds no object of the ` +
    `data layer: IdempotencyContext.${accessor} has none to give. Write through the transaction you gave run().`,
  noLeaseInTransactionalMode: (consumer: string) =>
    `${consumer} runs in the transactional mode, which holds no lease to extend: set mode: 'lease' on the handler to hold one.`,
  notThisLayer: (consumer: string, accessor: string, layer: string) =>
    `${consumer} asked IdempotencyContext.${accessor}, which only ${layer} has; the module's data layer is another. ` +
    "Write through the layer's own objects (they join the claim while the handler runs), or the accessor of that layer " +
    '(manager for TypeOrmDataLayer, client for PgPoolDataLayer).',
};
