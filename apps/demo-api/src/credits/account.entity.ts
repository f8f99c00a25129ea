import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A customer account and its credit balance, in cents. */
@Entity('accounts')
export class Account {
  @PrimaryColumn({ type: 'text' })
  account: string;

  @Column({ type: 'bigint', transformer: { to: (value: number) => value, from: (value: string) => Number(value) } })
  balance: number;
}
