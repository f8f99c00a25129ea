/** The texts of the boot check of idempotent BullMQ processors. */
export const bullmqProcessorMessages = {
  stalledJobsFailed: (handler: string, queue: string) =>
    `${handler} is idempotent, but its BullMQ worker of queue '${queue}' has maxStalledCount: 0: a job whose worker dies ` +
    'before the commit (a crash, a SIGKILL, a lost Redis lock) is failed by the stalled-job check instead of processed ' +
    'again, and its effect never happens. Remove maxStalledCount from @Processor() (BullMQ defaults to 1) or set it to 1 or more.',
  singleAttempt: (handler: string, queue: string) =>
    `Jobs of BullMQ queue '${queue}' (processed by ${handler}) get one attempt unless they are added with their own ` +
    '`attempts`: the queue has no defaultJobOptions.attempts above 1, so a job that fails on a passing error (a database ' +
    'cut, a restart) fails for good and its effect never happens. Set defaultJobOptions: { attempts: 8, backoff: ' +
    "{ type: 'exponential', delay: 1000 } } in BullModule.registerQueue() (or forRoot()), or give every job `attempts` and `backoff` when it is added.",
};
