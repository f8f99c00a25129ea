/** The message texts of IdempotencyHealthIndicator. */
export const healthMessages = {
  invalidDuplicateRate: (value: unknown) =>
    `health.maxDuplicateRate must be a share from 0 to 1, e.g. 0.05 for 5%; got ${JSON.stringify(value)}.`,
  thresholdWithinPurgeInterval: (name: string, threshold: string, interval: string) =>
    `health.${name} (${threshold}) must be longer than purge.interval (${interval}), ` +
    `or the indicator turns down between two purges; raise health.${name} or shorten purge.interval.`,
  storeTooLarge: (estimatedRows: number, max: number) =>
    `The store holds about ${estimatedRows} message ids, more than health.maxEstimatedRows (${max}).`,
  purgeLagging: (lag: string, max: string) =>
    `The oldest expired message id expired ${lag} ago and is not purged yet, longer than health.maxPurgeLag (${max}).`,
  purgeOverdue: (since: string, max: string) =>
    `This instance's last successful purge (or its start) was ${since} ago, longer than health.maxTimeSincePurge (${max}).`,
  duplicateRateHigh: (sender: string, duplicates: number, deliveries: number, window: string, rate: string, max: string) =>
    `${duplicates} of ${deliveries} deliveries from '${sender}' in the last ${window} were duplicates (${rate}), ` +
    `more than health.maxDuplicateRate (${max}).`,
  invalidDeadLetterCount: (value: unknown) => `health.maxOutboxDeadLetters must be a whole number, 0 or more; got ${JSON.stringify(value)}.`,
  outboxLagging: (lag: string, max: string) =>
    `The oldest outbox message not dispatched yet was written ${lag} ago, longer than health.maxOutboxLag (${max}): is a relay running, and does the broker accept its messages?`,
  outboxDeadLetters: (count: number, max: number) =>
    `${count === 1 ? '1 outbox message is parked as a dead letter' : `${count} outbox messages are parked as dead letters`}, ` +
    `more than health.maxOutboxDeadLetters (${max}): requeue or discard ${count === 1 ? 'it' : 'them'} with IdempotencyAdmin.`,
  storeUnreadable: (table: string, reason: string) => `The store ${table} could not be read: ${reason}`,
};
