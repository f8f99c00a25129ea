import { Controller, Get, Header } from '@nestjs/common';
import { IdempotencyMetricsService, PROMETHEUS_CONTENT_TYPE } from 'nestjs-idempotent-consumer';

@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: IdempotencyMetricsService) {}

  /** The idempotency counters, for Prometheus to scrape. */
  @Get()
  @Header('Content-Type', PROMETHEUS_CONTENT_TYPE)
  scrape(): string {
    return this.metrics.toPrometheusText();
  }
}
