import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { DataSource } from 'typeorm';
import type { ActiveClaim } from '../context/idempotency.context.js';
import { IdempotencyInFlightError } from '../errors/idempotency-in-flight.error.js';
import { IdempotencyKeyReusedError } from '../errors/idempotency-key-reused.error.js';
import { IdempotencyTransientError } from '../errors/idempotency-transient.error.js';
import {
  CLAIM_STORAGE,
  PG_LOCK_NOT_AVAILABLE,
  PG_TRANSIENT_ERROR_CODES,
  REJECT_LOCK_TIMEOUT_MS,
  RESOLVED_OPTIONS,
} from '../idempotency.internal-constants.js';
import { messages } from '../idempotency.messages.js';
import type { ResolvedIdempotencyOptions } from '../idempotency.options.js';
import { failureOutcome } from '../metrics/delivery-outcome.js';
import { IdempotencyMetricsService } from '../metrics/idempotency-metrics.service.js';
import type { ResolvedHandlerOptions } from '../decorators/idempotency-metadata.accessor.js';
import type { InFlightPolicy } from '../decorators/idempotent-handler.options.js';
import { fingerprint } from '../keys/fingerprint.js';
import { ClaimTransaction } from './claim-transaction.js';
import type { Claim, ClaimOutcome, RecordedResponse } from './claim.js';

interface StoredClaim {
  fingerprint: string;
  response_status: number | null;
  response_body: unknown;
}

/**
 * The claiming core every transport shares: claim the message in a new transaction, run the
 * handler in it, record the response and commit; or, when a twin already claimed it, return the
 * twin's recorded response without running the handler.
 */
@Injectable()
export class ClaimingService implements OnModuleInit {
  private readonly logger = new Logger('Idempotency');
  private dataSource: DataSource;

  constructor(
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    @Inject(CLAIM_STORAGE) private readonly storage: AsyncLocalStorage<ActiveClaim>,
    private readonly moduleRef: ModuleRef,
    private readonly metrics: IdempotencyMetricsService,
  ) {}

  onModuleInit(): void {
    this.dataSource = this.moduleRef.get<DataSource>(getDataSourceToken(this.options.dataSource), { strict: false });
  }

  /**
   * The claim of one delivery to the handler `options` describes; `defaultInFlight` is the
   * transport's policy for handlers that set none.
   */
  claimFor(
    options: ResolvedHandlerOptions,
    defaultInFlight: InFlightPolicy,
    delivery: { key: string; sender: string; payload: unknown },
  ): Claim {
    return {
      consumer: options.consumer,
      key: delivery.key,
      sender: delivery.sender,
      fingerprint: fingerprint(delivery.payload),
      retentionMs: options.retentionMs,
      lockTimeoutMs: (options.inFlight ?? defaultInFlight) === 'wait' ? this.options.inFlightWaitTimeoutMs : REJECT_LOCK_TIMEOUT_MS,
    };
  }

  /**
   * Processes `claim` exactly once.
   * @param handle Runs the handler; it sees the transaction through `IdempotencyContext`.
   * @param record What of the handler's result to store for replays.
   * @throws IdempotencyKeyReusedError when a twin with another payload fingerprint was processed.
   * @throws IdempotencyInFlightError when a twin holds the claim past `claim.lockTimeoutMs`.
   * @throws IdempotencyTransientError on a serialization failure or deadlock (nothing committed).
   * @throws the handler's own error, unchanged, after rolling back the claim with the work.
   */
  async process<T>(claim: Claim, handle: () => Promise<T>, record: (result: T) => RecordedResponse): Promise<ClaimOutcome<T>> {
    const transaction = await ClaimTransaction.connect(this.dataSource);
    try {
      if (!(await this.claimOrReportInFlight(transaction, claim))) {
        const response = await this.readTwin(transaction, claim);
        this.logger.log(messages.duplicate(claim.consumer, claim.key, claim.sender));
        this.metrics.recordDelivery(claim, 'duplicate');
        return { kind: 'duplicate', response };
      }
      const active: ActiveClaim = {
        manager: transaction.queryRunner.manager,
        consumer: claim.consumer,
        key: claim.key,
        sender: claim.sender,
      };
      const result = await this.storage.run(active, handle);
      await transaction.commit(this.recordStatements(transaction, claim, record(result)));
      this.metrics.recordDelivery(claim, 'processed');
      return { kind: 'processed', result };
    } catch (error) {
      const failure = this.translate(error, claim);
      this.metrics.recordDelivery(claim, failureOutcome(failure));
      throw failure;
    } finally {
      await transaction.close();
    }
  }

  private async claimOrReportInFlight(transaction: ClaimTransaction, claim: Claim): Promise<boolean> {
    try {
      return await this.tryClaim(transaction, claim);
    } catch (error) {
      throw postgresErrorCode(error) === PG_LOCK_NOT_AVAILABLE
        ? new IdempotencyInFlightError(claim.consumer, claim.key)
        : error;
    }
  }

  /** True when this delivery won the claim; false when a committed twin holds it. */
  private async tryClaim(transaction: ClaimTransaction, claim: Claim): Promise<boolean> {
    const table = this.table;
    const [, inserted] = await transaction.begin([
      `SET LOCAL lock_timeout = ${claim.lockTimeoutMs}`,
      `INSERT INTO ${table} (consumer, message_id, sender, fingerprint, expires_at) ` +
        `VALUES (${transaction.literal(claim.consumer)}, ${transaction.literal(claim.key)}, ` +
        `${transaction.literal(claim.sender)}, ${transaction.literal(claim.fingerprint)}, ` +
        `now() + ${claim.retentionMs} * interval '1 millisecond') ` +
        `ON CONFLICT ON CONSTRAINT ${this.primaryKey} DO NOTHING RETURNING true AS claimed`,
      'SET LOCAL lock_timeout TO DEFAULT',
    ]);
    return inserted.rowCount === 1;
  }

  /** Reads the committed twin's response and ends this delivery's transaction. */
  private async readTwin(transaction: ClaimTransaction, claim: Claim): Promise<RecordedResponse> {
    const [found] = await transaction.rollback([
      `SELECT fingerprint, response_status, response_body FROM ${this.table} ` +
        `WHERE consumer = ${transaction.literal(claim.consumer)} AND message_id = ${transaction.literal(claim.key)}`,
    ]);
    const twin = found.rows[0] as StoredClaim | undefined;
    if (!twin) {
      throw new IdempotencyTransientError(messages.claimVanished(claim.key), claim.consumer, claim.key);
    }
    if (twin.fingerprint !== claim.fingerprint) {
      throw new IdempotencyKeyReusedError(claim.consumer, claim.key);
    }
    return { status: twin.response_status, body: twin.response_body };
  }

  /**
   * The UPDATE that records `response` on the claim row; none when the response is empty (an
   * event handler's), since the claim row already holds NULLs and rewriting it would cost the
   * database a second row version for nothing.
   */
  private recordStatements(transaction: ClaimTransaction, claim: Claim, response: RecordedResponse): string[] {
    const body = JSON.stringify(response.body);
    const bodySql = body === undefined || body === 'null' ? 'NULL' : `${transaction.literal(body)}::json`;
    if (response.status === null && bodySql === 'NULL') {
      return [];
    }
    return [
      `UPDATE ${this.table} SET response_status = ${response.status ?? 'NULL'}, response_body = ${bodySql} ` +
        `WHERE consumer = ${transaction.literal(claim.consumer)} AND message_id = ${transaction.literal(claim.key)}`,
    ];
  }

  /** Database errors a retry cures become typed errors; anything else passes through unchanged. */
  private translate(error: unknown, claim: Claim): unknown {
    const code = postgresErrorCode(error);
    if (code && PG_TRANSIENT_ERROR_CODES.has(code)) {
      return new IdempotencyTransientError(messages.transient(claim.key, code), claim.consumer, claim.key, { cause: error });
    }
    return error;
  }

  private get table(): string {
    return `"${this.options.tableName}"`;
  }

  private get primaryKey(): string {
    return `"${this.options.tableName}_pkey"`;
  }
}

/** The SQLSTATE of a pg error, also when TypeORM wrapped it in a QueryFailedError. */
function postgresErrorCode(error: unknown): string | undefined {
  const candidate = error as { code?: unknown; driverError?: { code?: unknown } } | undefined;
  const code = candidate?.driverError?.code ?? candidate?.code;
  return typeof code === 'string' ? code : undefined;
}
