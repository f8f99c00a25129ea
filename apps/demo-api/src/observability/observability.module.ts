import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { HealthController } from './health.controller.js';
import { MetricsController } from './metrics.controller.js';

/** `GET /health` (database ping and the idempotency store) and `GET /metrics` (Prometheus text). */
@Module({
  imports: [TerminusModule],
  controllers: [HealthController, MetricsController],
})
export class ObservabilityModule {}
