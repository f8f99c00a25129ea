import { IdempotencyKeyError } from '../../errors/idempotency.errors.js';
import { headerText, requestKeyHeader } from './header-text.js';

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

describe('requestKeyHeader', () => {
  const where = 'the Idempotency-Key header';
  const read = (value: string, name = 'idempotency-key') => requestKeyHeader({ headers: { [name]: value } }, name, where);

  it('reads the Idempotency-Key as a Structured Field string, its escapes undone, and a bare key as it is', () => {
    expect(read('"8e03978e-40d5-43e8-bc93-6894a57f9324"')).toBe('8e03978e-40d5-43e8-bc93-6894a57f9324');
    expect(read('8e03978e-40d5-43e8-bc93-6894a57f9324')).toBe('8e03978e-40d5-43e8-bc93-6894a57f9324');
    expect(read('"a\\"b\\\\c d"')).toBe('a"b\\c d');
    expect(read('k"1"')).toBe('k"1"');
    expect(read('""')).toBe('');
  });

  it('leaves the quotes of any other header to the key', () => {
    expect(read('"evt_1"', 'x-github-delivery')).toBe('"evt_1"');
  });

  it.each(['"open', '"k";v=1', '"k" ', '"a\\nb"', asReceived('"café"'), '"tab\there"'])('refuses the malformed sf-string %p', (value) => {
    expect(() => read(value)).toThrow(IdempotencyKeyError);
    expect(() => read(value)).toThrow('The idempotency key (the Idempotency-Key header) starts with a double quote but is no Structured Field string (RFC 8941)');
  });
});
