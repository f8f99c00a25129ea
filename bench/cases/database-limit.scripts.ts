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
const CONSUMER = `'BenchController.idempotent'`;
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
BEGIN ISOLATION LEVEL READ COMMITTED \; SET LOCAL lock_timeout = 50 \; INSERT INTO "processed_messages" (consumer, message_id, sender, fingerprint, expires_at) VALUES (${CONSUMER}, ${KEY}, 'default', '61d7a1e9f61d9c4dde7d591bd322cb4d132b30e7f0eb50025d95c6ac4ae6e5db', now() + 604800000 * interval '1 millisecond') ON CONFLICT ON CONSTRAINT "processed_messages_pkey" DO NOTHING RETURNING true AS claimed \; SET LOCAL lock_timeout TO DEFAULT;
${GRANT}
UPDATE "processed_messages" SET response_status = 201, response_headers = '${RECORDED_HEADERS}'::json, response_body = convert_to('{"account":"a' || :account || '","cents":' || :cents || ',"balance":' || :balance || '}', 'UTF8') WHERE consumer = ${CONSUMER} AND message_id = ${KEY} \; COMMIT;
`;
