/** The message texts of the SQS transport. */
export const sqsMessages = {
  leftForRedrive: (what: 'failed' | 'can never succeed') =>
    `${what} and is left on the queue: SQS shows it again after its visibility timeout, and the queue's redrive policy ` +
    'moves it to the dead-letter queue after maxReceiveCount receives',
  sqsConsumerRefused: (consumer: string, handler: string, problem: string) =>
    `The SQS consumer '${consumer}' delivers to ${handler}, which is idempotent, but ${problem}`,
};
