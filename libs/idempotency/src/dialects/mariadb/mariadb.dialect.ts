import type { StoreDialect } from '../store-dialect.js';
import { mariaDbLiteral } from './mariadb-literal.js';
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
  outboxStateSql,
  purgeDispatched,
  refusedOutsideTransaction,
  requeue,
  takeBatchSql,
  toOutboxSample,
} from './outbox.queries.js';
import { beginClaim, heldByTwin, recordExpiryStatement, recordStatements, twinStatement } from './claim.queries.js';
import {
  adminForgetSql,
  adminListSql,
  adminLookupSql,
  adminReleaseSql,
  catalogueParameters,
  catalogueStatement,
  consumerHasRowsSql,
  moveConsumerSql,
  purgeBatch,
  storedConsumersSql,
  storeStatisticsSql,
  toStoreFigures,
} from './store.queries.js';

/**
 * The store on MariaDB (10.6 or newer): the claim a plain INSERT whose duplicate entry (1062)
 * leaves the transaction open to read the twin; the record an UPDATE sent with the COMMIT;
 * statistics from `information_schema`; the purge in autocommitted batches at READ COMMITTED; leases
 * taken by an INSERT, or an UPDATE of an expired one; the outbox's relay polls (no NOTIFY), woken
 * at once by its own process's commits.
 * @internal
 */
export const MARIADB_DIALECT: StoreDialect = {
  name: 'MariaDB',
  literal: mariaDbLiteral,
  claim: { begin: beginClaim, heldByTwin, twinStatement, recordExpiryStatement, recordStatements },
  statistics: { storeStatisticsSql, toStoreFigures },
  purge: { purgeBatch },
  catalogue: { catalogueStatement, catalogueParameters, storedConsumersSql, moveConsumerSql, consumerHasRowsSql },
  outbox: {
    notifies: false,
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
