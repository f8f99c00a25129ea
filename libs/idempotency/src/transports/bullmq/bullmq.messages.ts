/** The message texts of the BullMQ transport. */
export const bullmqMessages = {
  jobFailedForGood: (queue: string, jobId: string | undefined, reason: string) =>
    `Job ${jobId ?? '(without id)'} of BullMQ queue '${queue}' is failed without further attempts: ${reason}`,
};
