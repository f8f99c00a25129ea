import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { IdempotencyContext } from 'nestjs-idempotent-consumer';
import type { DataSource } from 'typeorm';
import { Account } from './account.entity.js';
import { LedgerEntry } from './ledger-entry.entity.js';

/** Grants credits and reads balances. */
@Injectable()
export class CreditsService {
  constructor(
    private readonly idempotency: IdempotencyContext,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /**
   * Adds `cents` to the account's balance and writes a ledger entry, in the idempotent handler's
   * transaction: both commit with the claim of the message, or neither does.
   * @returns the balance after this credit.
   */
  async grant(account: string, cents: number): Promise<number> {
    const manager = this.idempotency.manager;
    const [{ balance }] = await manager.query<{ balance: string }[]>(
      `INSERT INTO accounts (account, balance) VALUES ($1, $2)
       ON CONFLICT (account) DO UPDATE SET balance = accounts.balance + EXCLUDED.balance
       RETURNING balance`,
      [account, cents],
    );
    await manager.insert(LedgerEntry, { account, cents });
    return Number(balance);
  }

  /** The account's balance; 0 for an account never credited. */
  async balanceOf(account: string): Promise<number> {
    const found = await this.dataSource.manager.findOneBy(Account, { account });
    return found?.balance ?? 0;
  }
}
