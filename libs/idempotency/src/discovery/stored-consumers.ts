import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { IdempotencyOptionsError } from '../errors/idempotency.errors.js';
import { discoveryMessages } from './discovery.messages.js';
import { DISCOVERY_OPTIONS, type ResolvedDiscoveryOptions } from './discovery.options.js';
import { StoreHandle } from '../store/store.handle.js';
import { POSTGRES_STORE } from '../leasing/lease-stores.js';
import { IdempotencyExplorer } from './idempotency.explorer.js';
import { StoreSchemaCheck } from './store-schema.check.js';

/** How many distinct consumer names the start-up scan reads at most. */
const MAX_SCANNED_CONSUMERS = 1_000;
/** How many unused names the warning lists. */
const MAX_LISTED_CONSUMERS = 20;
/** How many ids one statement of the move to a handler's new name takes. */
const MOVE_BATCH = 5_000;

/**
 * What the store knows of consumer names, read once at start-up. Ids stored under a handler's
 * default name of versions before 0.3.0 (`Class.method`) are moved to its current name, in
 * batches safe beside concurrent claims, so that renaming the class or the method later loses
 * none of them; the claims of such a handler also keep recognising its former name while this
 * process runs (an instance of the earlier version may still store under it during a rolling
 * deploy). Stored names that no handler claims and that `knownConsumers` does not list are warned
 * about (a renamed `consumer` processes its redeliveries again). The distinct names come from one skip scan of the primary key, one
 * index probe per name, bounded.
 * @internal
 */
@Injectable()
export class StoredConsumers implements OnApplicationBootstrap {
  private readonly logger = new Logger('Idempotency');
  private readonly formerNames = new Map<string, string>();

  constructor(
    @Inject(DISCOVERY_OPTIONS) private readonly options: ResolvedDiscoveryOptions,
    private readonly explorer: IdempotencyExplorer,
    private readonly store: StoreHandle,
    private readonly schema: StoreSchemaCheck,
  ) {}

  /** The former name of `consumer` whose ids its claims must also recognise, if any. */
  formerNameOf(consumer: string): string | undefined {
    return this.formerNames.get(consumer);
  }

  async onApplicationBootstrap(): Promise<void> {
    const handlers = this.explorer.discovered().map(({ handler }) => handler);
    const inTable = handlers.filter((handler) => handler.mode === 'transaction' || handler.store === POSTGRES_STORE);
    // The schema check reports a store that lacks the table or a column; nothing is moved then.
    if (inTable.length === 0 || !(await this.schema.passed())) {
      return;
    }
    const stored = await this.storedNames();
    const claimed = new Set([...handlers.map((handler) => handler.consumer), ...this.options.knownConsumers]);
    const moved: [string, string, number][] = [];
    for (const handler of inTable) {
      const legacy = handler.legacyConsumer;
      if (legacy === undefined || !stored.names.has(legacy) || claimed.has(legacy)) {
        continue;
      }
      moved.push([handler.consumer, legacy, await this.moveIds(legacy, handler.consumer)]);
      if (handler.mode === 'lease') {
        // A lease claim looks under the handler's own name only: a lease an earlier version still holds must end first.
        if (await this.hasRows(legacy)) {
          throw new IdempotencyOptionsError(discoveryMessages.legacyLeaseHeld(handler.name, handler.consumer, legacy));
        }
      } else {
        this.formerNames.set(handler.consumer, legacy);
      }
      claimed.add(legacy);
    }
    if (moved.length > 0) {
      this.logger.log(discoveryMessages.legacyConsumersMoved(moved));
    }
    const unused = [...stored.names].filter((name) => !claimed.has(name));
    if (this.options.warnOnUnusedConsumers && unused.length > 0) {
      this.logger.warn(discoveryMessages.unusedConsumers(unused.slice(0, MAX_LISTED_CONSUMERS), stored.more || unused.length > MAX_LISTED_CONSUMERS));
    }
  }

  /** Moves every id of `from` to `to`, a batch per statement; answers how many left `from`. */
  private async moveIds(from: string, to: string): Promise<number> {
    const sql = this.store.dialect.catalogue.moveConsumerSql(this.store.table, MOVE_BATCH);
    let total = 0;
    for (;;) {
      const {
        rows: [{ moved }],
      } = await this.store.query<{ moved: number }>(sql, [from, to]);
      if (moved === 0) {
        return total;
      }
      total += moved;
    }
  }

  private async hasRows(consumer: string): Promise<boolean> {
    const {
      rows: [{ held }],
    } = await this.store.query<{ held: boolean }>(this.store.dialect.catalogue.consumerHasRowsSql(this.store.table), [consumer]);
    return held;
  }

  /** The distinct consumer names in the table, at most MAX_SCANNED_CONSUMERS. */
  private async storedNames(): Promise<{ names: Set<string>; more: boolean }> {
    const { rows } = await this.store.query<{ consumer: string }>(this.store.dialect.catalogue.storedConsumersSql(this.store.table, MAX_SCANNED_CONSUMERS + 1));
    return { names: new Set(rows.slice(0, MAX_SCANNED_CONSUMERS).map((row) => row.consumer)), more: rows.length > MAX_SCANNED_CONSUMERS };
  }
}
