import { describe, expect, it } from 'vitest';
import { hashSecret, mintApiKey, parseApiKey, secretMatches } from '../../src/access/api-keys.js';

describe('API key secrets', () => {
  const minted = mintApiKey();
  const { secret } = parseApiKey(minted.rawKey)!;

  it('matches the secret a key was minted with against its stored hash', () => {
    expect(minted.secretHash).toBe(hashSecret(secret));
    expect(secretMatches(secret, minted.secretHash)).toBe(true);
  });

  it('refuses another secret, and a stored hash that is not a whole SHA-256 in hex', () => {
    const other = parseApiKey(mintApiKey().rawKey)!.secret;
    expect(secretMatches(other, minted.secretHash)).toBe(false);
    // One character off in the secret: the hashes differ throughout.
    expect(secretMatches(`${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`, minted.secretHash)).toBe(false);
    expect(secretMatches(secret, minted.secretHash.slice(0, 62))).toBe(false);
    expect(secretMatches(secret, `${minted.secretHash.slice(0, 62)}zz`)).toBe(false);
    expect(secretMatches(secret, '')).toBe(false);
  });
});
