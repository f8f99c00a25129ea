/** The message texts of the Kafka transport. */
export const kafkaMessages = {
  autoCommitLosesMessages: (groupId: string, setting: string, handler: string) =>
    `The Kafka consumer group '${groupId}' would lose messages (${setting}): ${handler} is idempotent, and the module ` +
    'commits each offset itself once the claim committed, and seeks back to a failed message to retry it; kafkajs ' +
    'would commit past a failed message before its retry. Set run: { autoCommit: false } in the microservice options.',
  deadLetterFailed: (topic: string, reason: string) =>
    `Could not dead-letter a Kafka message to '${topic}' (${reason}); nothing is committed, and the partition reads it again in a second.`,
  positionsUnread: (group: string, reason: string) =>
    `Could not read the stored positions of the Kafka consumer group '${group}' (${reason}); its partitions start from Kafka's committed offsets, ` +
    'and a record read again is answered as a duplicate.',
};
