/** The message texts of the @golevelup/nestjs-rabbitmq transport. */
export const golevelupMessages = {
  handlerNacked: (requeue: boolean) => `the handler answered Nack (requeue: ${requeue})`,
  golevelupHandlerUnsupported: (handler: string) =>
    `${handler} is idempotent, but only a @RabbitSubscribe handler without batchOptions can be: the module settles each ` +
    'message of a subscription itself. Remove @IdempotentHandler() or make it a plain @RabbitSubscribe handler.',
  golevelupAutoAcknowledged: (handler: string) =>
    `The subscription of ${handler} consumes with noAck: true, but ${handler} is idempotent and the module acknowledges ` +
    'each message itself once it committed. Remove noAck from queueOptions.consumerOptions.',
  golevelupAcksFailures: (handler: string) =>
    `The subscription of ${handler} acknowledges messages whose handling failed (errorBehavior ACK, ackErrorHandler, or ` +
    "the connection's defaultSubscribeErrorBehavior ACK): a message a guard or interceptor rejects before the claim would " +
    'be lost. Set errorBehavior to NACK (dead-letter) or REQUEUE on the subscription.',
  deadLetterTargetMissing: (handler: string, queue: string, missing: string) =>
    `The queue '${queue}' of ${handler} dead-letters to ${missing}, which does not exist on the broker: RabbitMQ would ` +
    'drop each message the module dead-letters (a poison message after maxAttempts, one without a usable key) while ' +
    "the module logs it as dead-lettered. Declare it before the application starts (RabbitMQModule's exchanges or " +
    "queues, or the broker's definitions), or correct the subscription's deadLetterExchange / deadLetterRoutingKey.",
};
