/** The failures the module settled with their broker and logged itself. */
const reported = new WeakSet<object>();

/**
 * Marks `error` as a failure of a message the module settled with its broker and logged (a nack
 * or a nak, with its retry delay or its dead-lettering): Nest's exception handler need not log it
 * a second time.
 * @internal
 */
export function markReported(error: unknown): void {
  if (typeof error === 'object' && error !== null) {
    reported.add(error);
  }
}

/**
 * For `@Catch()`, which selects a filter by `instanceof`: matches the errors `markReported()`
 * marked, whatever their class, and nothing else.
 * @internal
 */
export abstract class ReportedFailure {
  static [Symbol.hasInstance](error: unknown): boolean {
    return typeof error === 'object' && error !== null && reported.has(error);
  }
}
