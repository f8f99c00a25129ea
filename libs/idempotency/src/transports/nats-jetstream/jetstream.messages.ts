/** The message texts of the NATS JetStream transport. */
export const jetStreamMessages = {
  jetStreamAcksWithoutCommit: (durable: string, setting: string, handler: string) =>
    `The NATS JetStream consumer '${durable}' would lose messages (${setting}): ${handler} is idempotent, and the ` +
    'module acknowledges each message itself once it committed, retries it with nak and ends it with term. Set ' +
    "consumerOptions: { manualAck: true, ackPolicy: 'Explicit' } on the NatsJetStreamServer.",
  terminated: (subject: string, reason: string) => `Message on '${subject}' was terminated (JetStream will not redeliver it): ${reason}`,
};
