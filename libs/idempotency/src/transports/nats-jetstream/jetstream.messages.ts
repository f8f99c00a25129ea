/** The message texts of the NATS JetStream transport. */
export const jetStreamMessages = {
  jetStreamAcksWithoutCommit: (durable: string, setting: string, handler: string) =>
    `The NATS JetStream consumer '${durable}' would lose messages (${setting}): ${handler} is idempotent, and the ` +
    'module acknowledges each message itself once it committed, retries it with nak and ends it with term. Set ' +
    "consumerOptions: { manualAck: true, ackPolicy: 'Explicit' } on the NatsJetStreamServer.",
  deliverSubjectInStream: (handler: string, deliverTo: string, stream: string, subjects: readonly string[]) =>
    `The NATS JetStream consumers of ${handler} deliver to '${deliverTo}', a subject their own stream '${stream}' ` +
    `stores (subjects: ${subjects.map((subject) => `'${subject}'`).join(', ')}): nats-server refuses such a consumer ` +
    '("consumer deliver subject forms a cycle"). Set consumerOptions.deliverTo (or deliverToSubject) to a subject ' +
    'outside the subjects of the stream.',
  deliverSubjectRefused: (handler: string, deliverTo: string, refusal: string) =>
    `nats-server refused the NATS JetStream consumer of ${handler} (${refusal}): it delivers to '${deliverTo}', a ` +
    'subject the stream it consumes stores. Set consumerOptions.deliverTo (or deliverToSubject) to a subject outside ' +
    "the subjects of the stream (see them with 'nats stream info').",
};
