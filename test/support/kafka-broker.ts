import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// From the repository's root, where the suites and the bench run: the bench runs compiled, from dist/, where the source is not.
const SOURCE = resolve('test/support/kafka-mock-broker.c');
const HEADER = '/usr/include/librdkafka/rdkafka_mock.h';

/** A Kafka-protocol broker of the suite's own: librdkafka's mock cluster in a child process. */
export interface KafkaBroker {
  /** `host:port` of the first broker, for `brokers: [...]`. */
  readonly bootstrap: string;
  /** Stops it; everything it held is gone. */
  stop(): Promise<void>;
}

/**
 * Whether librdkafka's headers (Debian `librdkafka-dev`) are installed, to build the broker. With
 * CI=true a missing one fails the suite (.ci/run installs it); otherwise the suite says so and skips.
 */
export function kafkaBrokerAvailable(): boolean {
  if (existsSync(HEADER)) {
    return true;
  }
  const reason = `no ${HEADER}`;
  if (process.env.CI === 'true') {
    throw new Error(`${reason}; CI=true requires it (.ci/run installs it: apt-get install librdkafka-dev)`);
  }
  console.warn(`\n*** SKIPPING the Kafka suite: ${reason}. Install it (apt-get install librdkafka-dev) or set CI=true to make this a failure. ***\n`);
  return false;
}

/** Compiles the launcher once per source version into the temp folder, and returns its path. */
function launcher(): string {
  const folder = join(tmpdir(), 'idempotency-kafka-mock-broker');
  const binary = join(folder, `kafka-mock-broker-${Math.floor(statSync(SOURCE).mtimeMs)}`);
  if (!existsSync(binary)) {
    mkdirSync(folder, { recursive: true });
    const building = `${binary}.${process.pid}`;
    execFileSync('gcc', ['-O2', '-o', building, SOURCE, '-lrdkafka'], { stdio: 'inherit' });
    execFileSync('mv', [building, binary]);
  }
  return binary;
}

/**
 * Starts a mock Kafka cluster of `brokers` brokers with the given topics (`name` → partitions;
 * the mock has no CreateTopics API, other topics are auto-created with one partition), and
 * resolves once it prints its bootstrap address.
 */
export async function startKafkaBroker(topics: Record<string, number> = {}, brokers = 1): Promise<KafkaBroker> {
  const args = [String(brokers), ...Object.entries(topics).map(([name, partitions]) => `${name}:${partitions}`)];
  const child: ChildProcess = spawn(launcher(), args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const bootstrap = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split('\n')[0];
      if (stdout.includes('\n')) resolve(line.split(',')[0]);
    });
    child.once('exit', (code) => reject(new Error(`kafka-mock-broker exited with ${code}: ${stderr}`)));
  });
  return {
    bootstrap,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.stdin!.end();
      await exited;
    },
  };
}
