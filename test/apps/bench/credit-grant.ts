import type { EntityManager } from 'typeorm';
import { LedgerEntry } from '../../../apps/demo-api/src/credits/ledger-entry.entity.js';

/**
 * The credit both bench handlers run: the statements of the demo's `CreditsService.grant` (a
 * balance upsert, then a ledger insert), on whichever transaction's `manager` it is given.
 * @returns the balance after this credit.
 */
export async function grantCredit(manager: EntityManager, account: string, cents: number): Promise<number> {
  const [{ balance }] = await manager.query<{ balance: string }[]>(
    `INSERT INTO accounts (account, balance) VALUES ($1, $2)
     ON CONFLICT (account) DO UPDATE SET balance = accounts.balance + EXCLUDED.balance
     RETURNING balance`,
    [account, cents],
  );
  await manager.insert(LedgerEntry, { account, cents });
  return Number(balance);
}
