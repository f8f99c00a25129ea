/** The variants of the JetStream and SQS consumers, one process each. */
export type TransportArm = 'plain' | 'idempotent';

/**
 * What the runner asks of a bench consumer: to consume a queue (until paused), to pause, or to run
 * a full garbage collection (which its `--expose-gc` allows) before a measured window.
 */
export type ConsumerCommand = { consume: string } | { pause: true } | { collect: true };

/** The answer to a command: the process's CPU time (user + system, µs) when it arrived (after collecting, for `collect`), or the error. */
export type ConsumerReply = { cpuMicros: number } | { error: string };

/** What a bench consumer process does on the runner's commands, and how it shuts down. */
export interface ConsumerControl {
  /** Starts consuming `queue` (what the name means is the transport's: a queue, a durable consumer). */
  consume(queue: string): Promise<void>;
  /** Stops consuming, without closing the app. */
  pause(): Promise<void>;
  /** Closes the app and whatever it connected to. */
  close(): Promise<void>;
}

/**
 * Answers the runner's commands over IPC with `control`, one at a time as the runner sends them,
 * closes on SIGTERM or when the runner goes away, and tells the runner it is ready.
 */
export function answerRunner(control: ConsumerControl): void {
  const send = process.send?.bind(process);
  if (!send) {
    throw new Error('the bench consumer is started by the bench runner (npm run bench), not by hand');
  }
  const run = async (command: ConsumerCommand): Promise<ConsumerReply> => {
    if ('collect' in command) {
      (globalThis as { gc?: () => void }).gc?.();
      return { cpuMicros: cpuMicros() };
    }
    const before = cpuMicros();
    await ('consume' in command ? control.consume(command.consume) : control.pause());
    return { cpuMicros: before };
  };
  process.on('message', (command: ConsumerCommand) => {
    run(command).then(
      (reply) => send(reply),
      (error: unknown) => send({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
    );
  });
  const stop = () => void control.close().finally(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('disconnect', stop);
  send({ ready: true });
}

function cpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}
