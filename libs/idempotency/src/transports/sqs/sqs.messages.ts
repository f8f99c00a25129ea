/** The message texts of the SQS transport. */
export const sqsMessages = {
  sqsLeftForRedrive: (queue: string, messageId: string, what: string, reason: string) =>
    `Message ${messageId} on '${queue}' ${what} and is left on the queue: SQS shows it again after its visibility ` +
    `timeout, and the queue's redrive policy moves it to the dead-letter queue after maxReceiveCount receives. ${reason}`,
  sqsConsumerRefused: (consumer: string, handler: string, problem: string) =>
    `The SQS consumer '${consumer}' delivers to ${handler}, which is idempotent, but ${problem}`,
};
