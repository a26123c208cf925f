import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decryptSecret, encryptSecret } from '../../src/domain/pin-crypto.js';

describe('pin-crypto', () => {
  const key = randomBytes(32);

  it('round-trips a PIN, leading zeros included', () => {
    const sealed = encryptSecret(key, '0042', 'dev_1');
    expect(sealed).not.toContain('0042');
    expect(decryptSecret(key, sealed, 'dev_1')).toBe('0042');
  });

  it('fails on any flipped byte instead of returning a wrong PIN', () => {
    const bytes = Buffer.from(encryptSecret(key, '123456'), 'base64');
    for (let i = 0; i < bytes.length; i++) {
      const tampered = Buffer.from(bytes);
      tampered[i] = tampered[i]! ^ 0x01;
      expect(() => decryptSecret(key, tampered.toString('base64'))).toThrow();
    }
  });

  it('fails under another key, another context, or when truncated', () => {
    const sealed = encryptSecret(key, '123456', 'dev_1');
    expect(() => decryptSecret(randomBytes(32), sealed, 'dev_1')).toThrow();
    expect(() => decryptSecret(key, sealed, 'dev_2')).toThrow();
    expect(() => decryptSecret(key, sealed.slice(0, 20))).toThrow();
  });

  it('gives distinct ciphertexts for the same PIN (random IV)', () => {
    const a = encryptSecret(key, '1234', 'dev_1');
    const b = encryptSecret(key, '1234', 'dev_1');
    expect(a).not.toBe(b);
    expect(decryptSecret(key, a, 'dev_1')).toBe(decryptSecret(key, b, 'dev_1'));
  });
});
