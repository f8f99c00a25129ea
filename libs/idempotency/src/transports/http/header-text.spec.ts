import { IdempotencyKeyError } from '../../errors/idempotency.errors.js';
import { headerText } from './header-text.js';

/** A header value as Node hands it over: one character per byte received. */
const asReceived = (text: string) => Buffer.from(text, 'utf8').toString('latin1');

describe('headerText', () => {
  it('reads the bytes of a non-ASCII header value as UTF-8', () => {
    expect(headerText(asReceived('café-1'), 'the Idempotency-Key header')).toBe('café-1');
    expect(headerText(asReceived('€ 😀'), 'the Idempotency-Key header')).toBe('€ 😀');
    expect(headerText(asReceived('\ufeffkey'), 'the Idempotency-Key header')).toBe('\ufeffkey');
  });

  it('passes ASCII and what is not a string as they are', () => {
    expect(headerText('order-1', 'the Idempotency-Key header')).toBe('order-1');
    expect(headerText(undefined, 'the Idempotency-Key header')).toBeUndefined();
  });

  it('refuses bytes that are not UTF-8, naming where they were read', () => {
    expect(() => headerText('caf\u00e9', 'the Idempotency-Key header')).toThrow(IdempotencyKeyError);
    expect(() => headerText('caf\u00e9', 'the Idempotency-Key header')).toThrow(
      'The idempotency key (the Idempotency-Key header) is not UTF-8 text: send its characters encoded as UTF-8 (ASCII is UTF-8 too).',
    );
  });
});
