import { Logger } from '@nestjs/common';
import { IdempotencyAdminError } from '../errors/idempotency.errors.js';
import { adminMessages } from './admin.messages.js';

const logger = new Logger('Idempotency');
const DEFAULT_LIST_LIMIT = 50;
const MAX_LIST_LIMIT = 1_000;

/** Logs what an operator's call did, with its actor and reason: the audit line of every admin call. @internal */
export function audit(action: string, subject: string, id: string | undefined, actor: string | undefined, reason: string | undefined, result: string): void {
  logger.log(adminMessages.adminAction(action, subject, id, actor ?? '(unnamed operator)', reason, result));
}

/** The `reason` given to `method` (`'IdempotencyAdmin.forget'`). @throws IdempotencyAdminError when it is missing or blank. @internal */
export function requireReason(method: string, reason: unknown, subject: string, id: string): string {
  if (typeof reason !== 'string' || reason.trim() === '') {
    throw new IdempotencyAdminError(adminMessages.adminReasonMissing(method), subject, id);
  }
  return reason;
}

/** A listing's `limit`, 50 unless given. @throws IdempotencyAdminError when it is not a whole number of 1 to 1000. @internal */
export function listLimit(method: string, limit: unknown, subject: string): number {
  const checked = limit ?? DEFAULT_LIST_LIMIT;
  if (typeof checked !== 'number' || !Number.isInteger(checked) || checked < 1 || checked > MAX_LIST_LIMIT) {
    throw new IdempotencyAdminError(adminMessages.adminLimit(method, MAX_LIST_LIMIT, checked), subject, '');
  }
  return checked;
}
