import { Controller, Get, Header } from '@nestjs/common';
import { register } from 'prom-client';

@Controller('metrics')
export class MetricsController {
  /** Every metric of prom-client's default registry, the idempotency counters among them, for Prometheus to scrape. */
  @Get()
  @Header('Content-Type', register.contentType)
  scrape(): Promise<string> {
    return register.metrics();
  }
}
