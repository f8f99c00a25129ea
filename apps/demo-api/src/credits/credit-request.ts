import { BadRequestException } from '@nestjs/common';

/** A credit to grant: the body of `POST /credits`, the data of a `credit.granted` event. */
export interface CreditRequest {
  account: string;
  cents: number;
}

const MAX_CENTS = 1_000_000_000;

/** Validates a credit request; answers 400 with what is wrong. */
export function toCreditRequest(value: unknown): CreditRequest {
  const { account, cents } = (value ?? {}) as Partial<Record<keyof CreditRequest, unknown>>;
  if (typeof account !== 'string' || account.length === 0 || account.length > 64) {
    throw new BadRequestException('account must be a non-empty string of at most 64 characters');
  }
  if (typeof cents !== 'number' || !Number.isInteger(cents) || cents <= 0 || cents > MAX_CENTS) {
    throw new BadRequestException(`cents must be a whole number from 1 to ${MAX_CENTS}`);
  }
  return { account, cents };
}
