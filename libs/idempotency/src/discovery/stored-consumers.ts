import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { IdempotencyOptionsError } from '../errors/idempotency-options.error.js';
import { discoveryMessages } from './discovery.messages.js';
import { RESOLVED_OPTIONS, type ResolvedIdempotencyOptions } from '../idempotency.options.js';
import { DataSourceJoin } from '../joining/data-source-join.js';
import { POSTGRES_STORE } from '../leasing/lease-stores.js';
import { postgresErrorCode } from '../claiming/claim-errors.js';
import { IdempotencyExplorer } from './idempotency.explorer.js';
import { storedConsumersSql } from './stored-consumers.queries.js';

/** How many distinct consumer names the start-up scan reads at most. */
const MAX_SCANNED_CONSUMERS = 1_000;
/** How many unused names the warning lists. */
const MAX_LISTED_CONSUMERS = 20;
const PG_UNDEFINED_TABLE = '42P01';

/**
 * What the store knows of consumer names, read once at start-up: which handlers still have ids
 * under their default name of versions before 0.3.0 (`Class.method`), so their claims keep
 * recognising them, and which stored names no handler claims any more (a warning: a renamed
 * `consumer` processes its redeliveries again). The distinct names come from one skip scan of the
 * primary key, one index probe per name, bounded.
 * @internal
 */
@Injectable()
export class StoredConsumers implements OnApplicationBootstrap {
  private readonly logger = new Logger('Idempotency');
  private readonly formerNames = new Map<string, string>();

  constructor(
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly explorer: IdempotencyExplorer,
    private readonly join: DataSourceJoin,
  ) {}

  /** The former name of `consumer` whose ids its claims must also recognise, if any. */
  formerNameOf(consumer: string): string | undefined {
    return this.formerNames.get(consumer);
  }

  async onApplicationBootstrap(): Promise<void> {
    const handlers = this.explorer.discovered().map(({ handler }) => handler);
    const inTable = handlers.filter((handler) => handler.mode === 'transaction' || handler.store === POSTGRES_STORE);
    if (inTable.length === 0) {
      return;
    }
    const stored = await this.storedNames();
    if (!stored) {
      return;
    }
    const claimed = new Set(handlers.map((handler) => handler.consumer));
    for (const handler of inTable) {
      const legacy = handler.legacyConsumer;
      if (legacy === undefined || !stored.names.has(legacy) || claimed.has(legacy)) {
        continue;
      }
      if (handler.mode === 'lease') {
        throw new IdempotencyOptionsError(discoveryMessages.legacyLeaseConsumer(handler.name, handler.consumer, legacy));
      }
      this.formerNames.set(handler.consumer, legacy);
      claimed.add(legacy);
    }
    if (this.formerNames.size > 0) {
      this.logger.log(discoveryMessages.legacyConsumers([...this.formerNames]));
    }
    const unused = [...stored.names].filter((name) => !claimed.has(name));
    if (this.options.warnOnUnusedConsumers && unused.length > 0) {
      this.logger.warn(discoveryMessages.unusedConsumers(unused.slice(0, MAX_LISTED_CONSUMERS), stored.more || unused.length > MAX_LISTED_CONSUMERS));
    }
  }

  /** The distinct consumer names in the table, at most MAX_SCANNED_CONSUMERS; undefined while the table does not exist. */
  private async storedNames(): Promise<{ names: Set<string>; more: boolean } | undefined> {
    try {
      const rows = (await this.join.claimDataSource().query(storedConsumersSql(this.options.tableName, MAX_SCANNED_CONSUMERS + 1))) as {
        consumer: string;
      }[];
      return { names: new Set(rows.slice(0, MAX_SCANNED_CONSUMERS).map((row) => row.consumer)), more: rows.length > MAX_SCANNED_CONSUMERS };
    } catch (error) {
      // The schema check reports a missing table; nothing is stored under any name then.
      if (postgresErrorCode(error) === PG_UNDEFINED_TABLE) {
        return undefined;
      }
      throw error;
    }
  }
}
