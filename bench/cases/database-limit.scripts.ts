// The pgbench scripts of case 3: the statements each bench handler sends, as the server's
// statement log shows them (log_statement = 'all'), with the values the app binds as $1, $2
// inlined (pgbench runs them in the simple protocol) and pgbench variables for what varies:
// 1,000 accounts, 1 to 100 cents, a random idempotency key per transaction; the recorded body, a
// bytea literal in the app's statement, is made by convert_to here. Each line is one round trip;
// `\;` joins statements into one query, as the library joins them.

const GRANT_VARIABLES = String.raw`\set account random(0, 999)
\set cents random(1, 100)`;

const GRANT = String.raw`INSERT INTO accounts (account, balance) VALUES ('a' || :account, :cents) ON CONFLICT (account) DO UPDATE SET balance = accounts.balance + EXCLUDED.balance RETURNING balance \gset
INSERT INTO "ledger_entries"("account", "cents", "created_at") VALUES ('a' || :account, :cents, DEFAULT) RETURNING "id", "created_at";`;

const KEY = `'pgbench-' || :client_id || '-' || :key`;
const CONSUMER = `'POST /idempotent/credits'`;
/** The headers the Express app records with the response: those set while it was written. */
const RECORDED_HEADERS = String.raw`{"content-type":"application/json; charset=utf-8","etag":"W/\"2e-0Zp6bVt0OK1Ty3z1yJrOoq1dGJE\""}`;

/** `POST /plain/credits`: TypeORM's `DataSource.transaction()` around the grant. */
export const PLAIN_TRANSACTION_SQL = `${GRANT_VARIABLES}
START TRANSACTION;
${GRANT}
COMMIT;
`;

/**
 * `POST /idempotent/credits`, first delivery: the claim travels with BEGIN, the grant, then the
 * response record travels with COMMIT. Four round trips, as the plain transaction.
 */
export const IDEMPOTENT_REQUEST_SQL = String.raw`${GRANT_VARIABLES}
\set key random(1, 1000000000000000)
BEGIN ISOLATION LEVEL READ COMMITTED \; SELECT "processed_messages_claim"(${CONSUMER}, ${KEY}, 'default', '61d7a1e9f61d9c4dde7d591bd322cb4d132b30e7f0eb50025d95c6ac4ae6e5db', 604800000) AS claimed;
${GRANT}
SELECT "processed_messages_record"(${CONSUMER}, ${KEY}, 201, '${RECORDED_HEADERS}'::json, convert_to('{"account":"a' || :account || '","cents":' || :cents || ',"balance":' || :balance || '}', 'UTF8')) \; COMMIT;
`;
