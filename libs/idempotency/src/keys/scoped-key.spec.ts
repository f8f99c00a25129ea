/* eslint-disable no-control-regex -- the separators of a scoped id are control characters, on purpose */
import { ANONYMOUS_SCOPE, scopedMessageId, shownKey } from './scoped-key.js';

describe('scopedMessageId', () => {
  it('stores the scope as its SHA-256 and the key as it is, apart by a control character no key can hold', () => {
    const id = scopedMessageId('order-1', 'alice');
    expect(id).toMatch(/^[A-Za-z0-9_-]{43}\u001forder-1$/);
    expect(id).not.toContain('alice');
    expect(scopedMessageId('order-1', 'alice')).toBe(id);
  });

  it('gives each scope its own id for one key, and each key its own id in one scope', () => {
    const ids = [scopedMessageId('k', 'alice'), scopedMessageId('k', 'bob'), scopedMessageId('k2', 'alice'), scopedMessageId('k', 'alice\u0020')];
    expect(new Set(ids).size).toBe(4);
  });

  it('fits the 255 characters of the column: keys up to 211 characters stay readable, longer ones are stored as their SHA-256', () => {
    expect(scopedMessageId('k'.repeat(211), 's'.repeat(255))).toHaveLength(255);
    const long = scopedMessageId('k'.repeat(212), 's'.repeat(255));
    expect(long).toMatch(/^[A-Za-z0-9_-]{43}\u001e[A-Za-z0-9_-]{43}$/);
    expect(scopedMessageId('k'.repeat(255), 's')).not.toBe(scopedMessageId(`${'k'.repeat(254)}j`, 's'));
  });
});

describe('shownKey', () => {
  it('shows the client key and that it is scoped, never the scope', () => {
    expect(shownKey('order-1')).toBe("'order-1'");
    expect(shownKey(scopedMessageId('order-1', 'alice'))).toBe("'order-1' (scoped to its caller)");
    expect(shownKey(scopedMessageId('k'.repeat(255), 'alice'))).toMatch(/^with SHA-256 '[A-Za-z0-9_-]{43}' \(scoped to its caller\)$/);
  });

  it('shows that a key is an anonymous caller\'s', () => {
    expect(shownKey(scopedMessageId('order-1', ANONYMOUS_SCOPE))).toBe("'order-1' (of an anonymous caller)");
  });
});

describe('the anonymous callers\' namespace', () => {
  it('is the SHA-256 of the empty text: apart from every caller\'s ids and from the unscoped key', () => {
    const anonymous = scopedMessageId('order-1', ANONYMOUS_SCOPE);
    expect(anonymous).toBe('47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU\u001forder-1');
    expect(anonymous).not.toBe(scopedMessageId('order-1', 'alice'));
    expect(anonymous).not.toBe('order-1');
  });
});
