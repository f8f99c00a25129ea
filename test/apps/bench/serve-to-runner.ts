import type { INestApplication } from '@nestjs/common';
import type { AddressInfo } from 'node:net';

/**
 * Serves a bench app to the runner that `fork()`ed it: listens on a free port, reports it over
 * IPC, and closes (with `close`, the app's own by default) when the runner stops it or goes away.
 */
export async function serveToRunner(app: INestApplication, close: () => Promise<unknown> = () => app.close()): Promise<void> {
  await app.listen(0, '127.0.0.1');
  const server = app.getHttpServer();
  if (process.env.BENCH_UNDER_TOOL === '1') {
    // Under valgrind a pause between windows (a GC, the counter's dump) outlasts Node's 5 s
    // keep-alive, and the load generator's next request meets a closed connection.
    server.keepAliveTimeout = 600_000;
  }
  const { port } = server.address() as AddressInfo;
  const stop = () => void close().finally(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('disconnect', stop);
  process.send!({ port });
}
