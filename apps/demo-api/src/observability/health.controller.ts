import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { IdempotencyHealthIndicator } from 'nestjs-idempotent-consumer';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly idempotency: IdempotencyHealthIndicator,
  ) {}

  /** 200 when the database answers and the processed-messages store is within its thresholds; else 503. */
  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.database.pingCheck('database').withTimeout(1500), () => this.idempotency.isHealthy()]);
  }
}
