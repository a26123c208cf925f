import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case

/**
 * Time-ordered identifiers (`emp_01j…`): the 10-character time part sorts by creation,
 * so keyset pagination on id follows creation order.
 */
export function newId(prefix: string, now = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes(10);
  let rand = '';
  for (const byte of bytes) rand += ALPHABET[byte % 32];
  return `${prefix}_${time}${rand}`;
}
