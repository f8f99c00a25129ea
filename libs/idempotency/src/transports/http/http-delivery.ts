import { type CallHandler, type ExecutionContext, Injectable } from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants.js';
import { HttpAdapterHost, Reflector } from '@nestjs/core';
import { lastValueFrom } from 'rxjs';
import { ClaimingService } from '../../claiming/claiming.service.js';
import { IdempotencyMetadataAccessor, type ResolvedHandlerOptions } from '../../decorators/idempotency-metadata.accessor.js';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER } from '../../idempotency.constants.js';
import { readPath, toMessageKey } from '../../keys/message-key.js';
import { IdempotencyMetricsService } from '../../metrics/idempotency-metrics.service.js';

interface HttpRequestLike {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
}

/** Runs an idempotent controller method: claim, handle, record; or replay the recorded response. */
@Injectable()
export class HttpDelivery {
  constructor(
    private readonly claims: ClaimingService,
    private readonly accessor: IdempotencyMetadataAccessor,
    private readonly reflector: Reflector,
    private readonly adapterHost: HttpAdapterHost,
    private readonly metrics: IdempotencyMetricsService,
  ) {}

  async handle(context: ExecutionContext, next: CallHandler): Promise<unknown> {
    const options = this.accessor.resolve(context);
    const http = context.switchToHttp();
    const request = http.getRequest<HttpRequestLike>();
    const sender = typeof options.sender === 'function' ? options.sender(context) : options.sender;
    const claim = this.claims.claimFor(options, 'reject', {
      key: this.readKeyOrReject(options, context, request, sender),
      sender,
      payload: { url: request.url, body: request.body },
    });
    const status = this.successStatus(context, request.method);
    const outcome = await this.claims.process(
      claim,
      () => lastValueFrom(next.handle(), { defaultValue: undefined }),
      (body) => ({ status, body }),
    );
    if (outcome.kind === 'processed') {
      return outcome.result;
    }
    const response = http.getResponse();
    this.adapterHost.httpAdapter.status(response, outcome.response.status ?? status);
    this.adapterHost.httpAdapter.setHeader(response, IDEMPOTENT_REPLAYED_HEADER, 'true');
    return outcome.response.body;
  }

  /** The key; a delivery without a usable one is counted as rejected (answered 400). */
  private readKeyOrReject(options: ResolvedHandlerOptions, context: ExecutionContext, request: HttpRequestLike, sender: string): string {
    try {
      return this.readKey(options, context, request);
    } catch (error) {
      this.metrics.recordDelivery({ consumer: options.consumer, sender }, 'rejected');
      throw error;
    }
  }

  private readKey(options: ResolvedHandlerOptions, context: ExecutionContext, request: HttpRequestLike): string {
    const source = options.key ?? { header: IDEMPOTENCY_KEY_HEADER };
    if (typeof source === 'function') {
      return toMessageKey(source(context), 'the key function');
    }
    if ('header' in source) {
      return toMessageKey(request.headers[source.header.toLowerCase()], `the ${source.header} header`);
    }
    return toMessageKey(readPath(request.body, source.body), `'${source.body}' in the request body`);
  }

  /** The status Nest itself will send: `@HttpCode()`, else 201 for POST and 200 otherwise. */
  private successStatus(context: ExecutionContext, method: string): number {
    return this.reflector.get<number | undefined>(HTTP_CODE_METADATA, context.getHandler()) ?? (method === 'POST' ? 201 : 200);
  }
}
