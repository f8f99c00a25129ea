import type { DynamicModule, INestApplication, LoggerService, Type } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import type { IdempotencyModuleOptions } from 'nestjs-idempotent-consumer';
import { AppModule } from '../../apps/demo-api/src/app.module.js';

export type Platform = 'express' | 'fastify';
export const PLATFORMS: Platform[] = ['express', 'fastify'];

/** The demo's AppModule (plus any fixture modules), listening on a free port of 127.0.0.1. */
export async function startDemoApp(
  platform: Platform,
  databaseUrl: string,
  extraModules: (Type | DynamicModule)[] = [],
  logger: LoggerService | false = false,
  idempotency?: IdempotencyModuleOptions,
  poolSize?: number,
): Promise<{ app: INestApplication; baseUrl: string }> {
  const moduleRef = await Test.createTestingModule({
    imports: [AppModule.register({ databaseUrl, idempotency, poolSize }), ...extraModules],
  }).compile();
  const app =
    platform === 'fastify'
      ? moduleRef.createNestApplication(new FastifyAdapter(), { logger })
      : moduleRef.createNestApplication({ logger });
  // An application that fails to start is closed, so that what its bootstrap started (its pool, the
  // purge's and the samplers' timers) stops with it, before the test drops its database.
  await app.listen(0, '127.0.0.1').catch(async (error: unknown) => {
    await app.close().catch(() => undefined);
    throw error;
  });
  return { app, baseUrl: (await app.getUrl()).replace('[::1]', '127.0.0.1') };
}

/**
 * A JSON POST; answers status, headers and the parsed body. Each on a connection of its own
 * (`connection: close`): fetch sends a POST on a kept-alive socket the server may be closing at its
 * keep-alive timeout that very moment, and answers `ECONNRESET` (seen under CI's load).
 */
export async function post(url: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', connection: 'close', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined,
  };
}
