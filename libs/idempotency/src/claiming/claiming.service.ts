import { Inject, Injectable } from '@nestjs/common';
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { ActiveClaim } from '../context/idempotency.context.js';
import { CLAIM_STORAGE } from '../data-layers/data-layer.js';
import { IdempotencyInFlightError, IdempotencyTransientError } from '../errors/idempotency.errors.js';
import { REJECT_LOCK_TIMEOUT_MS } from './claim.constants.js';
import { claimMessages } from './claim.messages.js';
import { CLAIM_OPTIONS, type ResolvedClaimOptions } from './claim.options.js';
import { DataLayerJoin } from '../data-layers/data-layer-join.js';
import type { ClaimConnection } from '../data-layers/data-layer.js';
import { CallerClaimConnection } from '../data-layers/caller-claim-connection.js';
import { functionDroppedError, translateDatabaseError } from './claim-errors.js';
import type { ClaimOutcome, ClaimRequest, RecordedResponse } from './claim.js';
import type { ClaimSql, RecordExpiry, StoredClaim } from '../dialects/store-dialect.js';
import { quickLiteral } from './quick-literal.js';
import { WORK_SAVEPOINT } from '../data-layers/sql-claim-connection.js';
import { within } from '../duration/within.js';
import { type InFlightTwin, InFlightTwins, type TwinEnding } from './in-flight-twins.js';
import { DeliveryClaiming } from './delivery-claiming.js';
import { OpenClaim } from './open-claim.js';
import { ReplayCache } from '../replay-cache/replay-cache.js';

/** The settle hooks of a read that cannot win the claim (it reads a committed twin's record). */
const ignore = (): void => undefined;

/**
 * The transactional mode's protocol, which every transport shares: claim the message in a new
 * transaction on the data source, or find that a twin processed it and return the twin's recorded
 * response. A twin in flight in this process is waited for without a pooled connection; one of
 * another process holds the claim's row, and is waited for (`wait`) or answered (`reject`) as
 * `DeliveryClaiming` does. The model of this protocol, checked with spin, is
 * `transaction-protocol.pml` beside this file.
 * @internal
 */
@Injectable()
export class ClaimingService extends DeliveryClaiming<ClaimRequest> {
  private readonly twins = new InFlightTwins();

  constructor(
    @Inject(CLAIM_OPTIONS) options: ResolvedClaimOptions,
    @Inject(CLAIM_STORAGE) private readonly storage: AsyncLocalStorage<ActiveClaim>,
    private readonly join: DataLayerJoin,
    cache: ReplayCache,
  ) {
    super(options, cache);
  }

  /**
   * Tries the claim in the database, unless a twin of this process is in flight: that one is
   * waited for first.
   * @throws IdempotencyUnavailableError when no pooled connection came within `connectionTimeout`.
   * @throws IdempotencyTransientError on a serialization failure or deadlock.
   * @throws IdempotencySchemaError when the claim's function is missing (dropped since the start).
   */
  protected tryOnce(request: ClaimRequest, deadline: number): Promise<ClaimOutcome | undefined> {
    const entered = this.twins.enter(`${request.consumer}\u0000${request.key}`);
    return 'twin' in entered ? this.afterTwin(entered.twin, request, deadline) : this.attempt(request, entered.settle, entered.won);
  }

  /** Waits for `twin` to end; then replays what it committed, or tries the claim again. */
  private async afterTwin(twin: InFlightTwin, request: ClaimRequest, deadline: number): Promise<ClaimOutcome | undefined> {
    const ending = await this.twinEnding(twin, request, deadline);
    if (ending === undefined || (ending === 'held' && !request.waitForTwin)) {
      throw new IdempotencyInFlightError(request.consumer, request.key);
    }
    // A committed twin: read its record at once, beside the other waiting twins, with no deadline left to race.
    const duplicate = ending === 'committed' ? await this.attempt(request, ignore, ignore) : undefined;
    return duplicate ?? this.tryOnce(request, deadline);
  }

  /**
   * How a twin of this process ends. One that is still asking the database answers within its
   * claim's round trips, so it is waited for whole: its duplicates are not refused for its
   * latency. One that won its claim is processing: it is waited for by the in-flight policy
   * (`reject`: as long as the claim waits for a twin of another process).
   */
  private async twinEnding(twin: InFlightTwin, request: ClaimRequest, deadline: number): Promise<TwinEnding | undefined> {
    const claimed = await Promise.race([twin.ending.then(() => false), twin.claimed.then(() => true)]);
    if (!claimed) {
      return twin.ending;
    }
    return within(twin.ending, request.waitForTwin ? deadline - performance.now() : REJECT_LOCK_TIMEOUT_MS);
  }

  /** One try on a connection of its own: the claim, a duplicate, or undefined while a twin of another process holds it. */
  private async attempt(request: ClaimRequest, settle: (ending: TwinEnding) => void, won: () => void): Promise<ClaimOutcome | undefined> {
    let transaction: ClaimConnection | undefined;
    let claimed = false;
    let ending: TwinEnding = 'open';
    const claimedAt = this.cache.now();
    try {
      transaction = request.callerTransaction
        ? new CallerClaimConnection(request.callerTransaction)
        : await this.join.connect(this.options.connectionTimeoutMs, request);
      const sql = this.sql(transaction);
      if (await this.join.dialect.claim.begin(transaction, sql, request, request.savepoint ? [WORK_SAVEPOINT] : [])) {
        claimed = true;
        won();
        // In the caller's transaction, the record is not durable until the caller commits: nothing to cache.
        const settled = request.callerTransaction ? ignore : this.settled(request, claimedAt);
        return {
          kind: 'claimed',
          claim: new OpenClaim(transaction, request, sql, this.join.dialect.claim, this.storage, (outcome, recorded) => {
            settle(outcome === 'processed' ? 'committed' : 'open');
            settled(outcome, recorded);
          }),
        };
      }
      const response = await this.readTwin(transaction, sql, request, claimedAt);
      ending = 'committed';
      return this.replay(request, response);
    } catch (error) {
      if (this.join.dialect.claim.heldByTwin(error)) {
        ending = 'held';
        return undefined;
      }
      throw functionDroppedError(error, this.options.tableName, 'claim') ?? translateDatabaseError(error, request);
    } finally {
      if (!claimed) {
        await transaction?.close();
        settle(ending);
      }
    }
  }

  /**
   * Reads the committed twin's response and ends this delivery's transaction; keeps the response
   * in the replay cache until its row's expiry, as a duration by the database's clock from this
   * transaction's start, counted here from `claimedAt`, which came before it.
   */
  private async readTwin(
    transaction: ClaimConnection,
    sql: ClaimSql,
    request: ClaimRequest,
    claimedAt: number,
  ): Promise<RecordedResponse> {
    const [found, expiry] = await transaction.rollback([this.join.dialect.claim.twinStatement(sql, request), this.join.dialect.claim.recordExpiryStatement(sql, request)]);
    const twin = found.rows[0] as StoredClaim | undefined;
    if (!twin) {
      throw new IdempotencyTransientError(claimMessages.claimVanished(request.key), request.consumer, request.key);
    }
    this.refuseReusedKey(request, twin.fingerprint);
    if (twin.leased) {
      throw new IdempotencyInFlightError(request.consumer, request.key);
    }
    const response: RecordedResponse = { status: twin.response_status, headers: twin.response_headers, body: twin.response_body };
    const [own] = expiry.rows as RecordExpiry[];
    // None when the twin's row is under the consumer's former name: read from the store each time.
    if (own) {
      this.cache.fill(request, { fingerprint: twin.fingerprint, response }, claimedAt, own.expires_in_ms);
    }
    return response;
  }

  private sql(transaction: ClaimConnection): ClaimSql {
    return { table: this.options.tableName, literal: quickLiteral((value) => transaction.literal(value)), readsVoid: transaction.readsVoid };
  }
}
