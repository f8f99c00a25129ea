import pg from 'pg';
import type { StoreDialect } from '../store-dialect.js';
import { adminForgetSql, adminListSql, adminLookupSql, adminReleaseSql } from './admin.queries.js';
import { beginClaim, heldByTwin, recordExpiryStatement, recordStatements, twinStatement } from './claim.queries.js';
import { outboxStateSql, toOutboxSample } from './outbox-state.queries.js';
import {
  discard,
  dueSql,
  headersOf,
  idTaken,
  insertOutboxStatements,
  inTransactionCheckSql,
  markDispatchedSql,
  markFailedSql,
  outboxColumnsSql,
  outboxDeadLetterSql,
  outboxDeadLettersSql,
  purgeDispatched,
  refusedOutsideTransaction,
  requeue,
  takeBatchSql,
} from './outbox.queries.js';
import { purgeBatch } from './purge.queries.js';
import { catalogueParameters, catalogueStatement } from './store-schema.queries.js';
import { storeStatisticsSql, toStoreFigures } from './store-statistics.queries.js';
import { consumerHasRowsSql, moveConsumerSql, storedConsumersSql } from './stored-consumers.queries.js';

/**
 * The store on PostgreSQL: the claim and the record through the table's functions, one
 * multi-statement round trip with the BEGIN and with the COMMIT; the purge under a
 * transaction-level advisory lock; statistics from `pg_class`; the relay woken by NOTIFY.
 * @internal
 */
export const POSTGRES_DIALECT: StoreDialect = {
  name: 'PostgreSQL',
  literal: pg.escapeLiteral,
  claim: { begin: beginClaim, heldByTwin, twinStatement, recordExpiryStatement, recordStatements },
  statistics: { storeStatisticsSql, toStoreFigures },
  purge: { purgeBatch },
  catalogue: { catalogueStatement, catalogueParameters, storedConsumersSql, moveConsumerSql, consumerHasRowsSql },
  outbox: {
    notifies: true,
    outboxColumnsSql,
    outboxStateSql,
    toOutboxSample,
    purgeDispatched,
    dueSql,
    insertOutboxStatements,
    inTransactionCheckSql,
    refusedOutsideTransaction,
    idTaken,
    takeBatchSql,
      markDispatchedSql,
    markFailedSql,
    outboxDeadLettersSql,
    outboxDeadLetterSql,
    headersOf,
    requeue,
    discard,
  },
  admin: { adminLookupSql, adminListSql, adminForgetSql, adminReleaseSql },
};
