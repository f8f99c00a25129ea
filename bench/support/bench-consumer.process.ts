import { fileURLToPath } from 'node:url';
import type { ConsumerCommand, ConsumerReply } from '../app/consumer-commands.js';
import { forkBenchProcess, type ProcessLaunch } from './bench-app.process.js';
import type { BenchRuntime } from './bench-runtime.js';

const CONSUMER_ENTRY = fileURLToPath(new URL('../app/consumer.main.js', import.meta.url));

/** The bench app running as a message consumer in a child process, told over IPC which queue to consume. */
export interface BenchConsumerProcess {
  /** Its process id (that of the tool it runs under, which is the same process). */
  readonly pid: number;
  /** Starts consuming `queue`; resolves once it is on it, with its CPU time (µs) from before it connected. */
  consume(queue: string): Promise<number>;
  /** Stops consuming (unacked deliveries go back to the queue); resolves with its CPU time (µs) from before it stopped. */
  pause(): Promise<number>;
  /** Runs a full garbage collection; resolves with its CPU time (µs) after it. */
  collect(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Starts the bench consumer in a process of its own on `runtime`, on the bench database and the
 * broker at `brokerUrl`. It consumes nothing until asked to; `launch` starts it under a tool, and
 * `BENCH_APP_NODE_ARGS` applies to it too.
 */
export function startBenchConsumer(databaseUrl: string, brokerUrl: string, runtime: BenchRuntime, launch: ProcessLaunch = {}): Promise<BenchConsumerProcess> {
  return startConsumerProcess('the bench consumer', CONSUMER_ENTRY, runtime, { BENCH_DATABASE_URL: databaseUrl, BENCH_RABBITMQ_URL: brokerUrl }, launch);
}

/**
 * Starts the consumer `entry` (named `name` in errors), a bench process that answers the runner's
 * `ConsumerCommand`s over IPC as `consumer.main.ts` does, on `runtime` with `env` added to the runner's.
 */
export async function startConsumerProcess(
  name: string,
  entry: string,
  runtime: BenchRuntime,
  env: Record<string, string>,
  launch: ProcessLaunch = {},
): Promise<BenchConsumerProcess> {
  const consumer = await forkBenchProcess(`${name} (${runtime.name})`, entry, runtime, env, launch);
  const ask = (command: ConsumerCommand) =>
    new Promise<number>((done, fail) => {
      const exited = (code: number | null) => fail(new Error(`${name} exited with ${code}:\n${consumer.output()}`));
      consumer.child.once('exit', exited);
      consumer.child.once('message', (reply: ConsumerReply) => {
        consumer.child.off('exit', exited);
        if ('error' in reply) {
          fail(new Error(`${name} could not ${Object.keys(command)[0]}: ${reply.error}`));
        } else {
          done(reply.cpuMicros);
        }
      });
      consumer.child.send(command);
    });
  return {
    pid: consumer.child.pid as number,
    consume: (queue) => ask({ consume: queue }),
    pause: () => ask({ pause: true }),
    collect: () => ask({ collect: true }),
    stop: consumer.stop,
  };
}
