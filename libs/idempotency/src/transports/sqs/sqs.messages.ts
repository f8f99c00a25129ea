/** The message texts of the SQS transport. */
export const sqsMessages = {
  leftForRedrive: (what: 'failed' | 'can never succeed') =>
    `${what} and is left on the queue: SQS shows it again after ${what === 'failed' ? 'its retry delay' : 'its visibility timeout'}, and the queue's redrive policy ` +
    'moves it to the dead-letter queue after maxReceiveCount receives',
  sqsConsumerRefused: (consumer: string, handler: string, problem: string) =>
    `The SQS consumer '${consumer}' delivers to ${handler}, which is idempotent, but ${problem}`,
  sqsRetryDelayNotSet: (queue: string, messageId: string, reason: string) =>
    `Could not hide the failed message ${messageId} on '${queue}' for its retry delay (${reason}): SQS shows it again after its visibility timeout.`,
  sqsNoRedrivePolicy: (consumer: string, handler: string) =>
    `The queue of the SQS consumer '${consumer}' (delivering to ${handler}, which is idempotent) has no redrive policy: a message ` +
    'that can never succeed (no usable key, a handler that always fails) comes back until the queue\'s retention period drops it, ' +
    'unseen. Give the queue a RedrivePolicy: { deadLetterTargetArn, maxReceiveCount }.',
  sqsAttributesUnread: (consumer: string, reason: string) =>
    `Could not read the attributes of the queue of the SQS consumer '${consumer}' (${reason}): its redrive policy is unchecked, ` +
    "and failed messages' retry delays start from the handler's retryDelay alone. Allow sqs:GetQueueAttributes on the queue.",
  sqsNoReceiveCount: (consumer: string, handler: string) =>
    `The SQS consumer '${consumer}' (delivering to ${handler}, which is idempotent) does not receive ApproximateReceiveCount: ` +
    "a failed message's retry delay cannot grow with its receives. Add messageSystemAttributeNames: ['ApproximateReceiveCount'] to the consumer.",
};
