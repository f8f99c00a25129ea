import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IdempotencyContext } from 'nestjs-idempotent-consumer';
import type { Repository } from 'typeorm';
import { Account } from './account.entity.js';
import { LedgerEntry } from './ledger-entry.entity.js';

/** Grants credits and reads balances. */
@Injectable()
export class CreditsService {
  constructor(
    private readonly idempotency: IdempotencyContext,
    @InjectRepository(Account) private readonly accounts: Repository<Account>,
    @InjectRepository(LedgerEntry) private readonly ledger: Repository<LedgerEntry>,
  ) {}

  /**
   * Adds `cents` to the account's balance and writes a ledger entry, in the idempotent handler's
   * transaction: both commit with the claim of the message, or neither does. The upsert goes
   * through the claim's manager; the ledger entry through an injected repository, which joins
   * the claim while the handler runs.
   * @returns the balance after this credit.
   */
  async grant(account: string, cents: number): Promise<number> {
    const [{ balance }] = await this.idempotency.manager.query<{ balance: string }[]>(
      `INSERT INTO accounts (account, balance) VALUES ($1, $2)
       ON CONFLICT (account) DO UPDATE SET balance = accounts.balance + EXCLUDED.balance
       RETURNING balance`,
      [account, cents],
    );
    await this.ledger.insert({ account, cents });
    return Number(balance);
  }

  /** The account's balance; 0 for an account never credited. */
  async balanceOf(account: string): Promise<number> {
    const found = await this.accounts.findOneBy({ account });
    return found?.balance ?? 0;
  }
}
