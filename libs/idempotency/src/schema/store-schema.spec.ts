import { findMissing, schemaNeeds, type StoreCatalogue } from './store-schema.js';

const CURRENT: StoreCatalogue = {
  tableFound: true,
  columns: [
    { name: 'consumer', type: 'text', notNull: true },
    { name: 'message_id', type: 'character varying(255)', notNull: true },
    { name: 'sender', type: 'text', notNull: true },
    { name: 'fingerprint', type: 'character(64)', notNull: false },
    { name: 'response_status', type: 'smallint', notNull: false },
    { name: 'response_headers', type: 'json', notNull: false },
    { name: 'response_body', type: 'bytea', notNull: false },
    { name: 'processed_at', type: 'timestamp with time zone', notNull: true },
    { name: 'expires_at', type: 'timestamp with time zone', notNull: true },
    { name: 'lease_token', type: 'uuid', notNull: false },
    { name: 'lease_expires_at', type: 'timestamp with time zone', notNull: false },
  ],
  claimFound: true,
  recordFound: true,
};
const ALL = { table: true, functions: true };
const without = (...names: string[]) => CURRENT.columns.filter((column) => !names.includes(column.name));

describe('the store schema a version needs', () => {
  it('is needed by the handlers that use the built-in store, the functions by the transactional ones only', () => {
    expect(schemaNeeds([], 'postgres')).toEqual({ table: false, functions: false });
    expect(schemaNeeds([{ mode: 'lease', store: 'redis' }], 'postgres')).toEqual({ table: false, functions: false });
    expect(schemaNeeds([{ mode: 'lease', store: 'postgres' }], 'postgres')).toEqual({ table: true, functions: false });
    expect(schemaNeeds([{ mode: 'lease', store: 'redis' }, { mode: 'transaction', store: 'postgres' }], 'postgres')).toEqual(ALL);
  });

  it('lacks nothing in the current shape, nor with more than it needs', () => {
    expect(findMissing('processed_messages', CURRENT, ALL)).toEqual({ missing: [], migrations: [] });
    const newer = { ...CURRENT, columns: [...CURRENT.columns, { name: 'attempts', type: 'integer', notNull: false }] };
    expect(findMissing('processed_messages', newer, ALL)).toEqual({ missing: [], migrations: [] });
  });

  it('names each lack of an earlier shape, and the upgrade migration', () => {
    const first: StoreCatalogue = {
      tableFound: true,
      columns: [
        ...without('fingerprint', 'response_headers', 'response_body', 'lease_token', 'lease_expires_at'),
        { name: 'fingerprint', type: 'character(64)', notNull: true },
        { name: 'response_body', type: 'json', notNull: false },
      ],
      claimFound: false,
      recordFound: false,
    };
    expect(findMissing('processed_messages', first, ALL)).toEqual({
      missing: [
        'the column fingerprint is NOT NULL',
        'the column response_headers does not exist',
        'the column response_body is json, not bytea',
        'the column lease_token does not exist',
        'the column lease_expires_at does not exist',
        'the function processed_messages_claim(text, text, text, text, bigint) does not exist',
        'the function processed_messages_record(text, text, integer, json, bytea) does not exist',
      ],
      migrations: ['CreateProcessedMessagesFunctions1796256000000', 'UpgradeProcessedMessagesTable1796342400000'],
    });
    expect(findMissing('processed_messages', { ...CURRENT, columns: without('lease_token', 'lease_expires_at') }, { table: true, functions: false })).toEqual({
      missing: ['the column lease_token does not exist', 'the column lease_expires_at does not exist'],
      migrations: ['UpgradeProcessedMessagesTable1796342400000'],
    });
  });

  it('names all three migrations when the table is missing, and nothing when nothing is needed', () => {
    const none: StoreCatalogue = { tableFound: false, columns: [], claimFound: false, recordFound: false };
    expect(findMissing('orders', none, { table: true, functions: false })).toEqual({
      missing: ['the table orders does not exist'],
      migrations: ['CreateProcessedMessagesTable1764633600000', 'CreateProcessedMessagesFunctions1796256000000', 'UpgradeProcessedMessagesTable1796342400000'],
    });
    expect(findMissing('orders', none, { table: false, functions: false })).toEqual({ missing: [], migrations: [] });
  });
});
