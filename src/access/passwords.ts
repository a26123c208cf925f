import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import type { Queryable } from '../store/db.js';
import { sql } from '../store/sql.js';
import { badRequest, notFound } from '../kit/errors.js';

/** scrypt parameters (N=2^15, r=8, p=1: OWASP's minimum); stored with the hash so they can rise later. */
const PARAMS = { N: 32_768, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;
const KEY_LENGTH = 32;
export const MIN_PASSWORD_LENGTH = 12;

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

/** `scrypt$N$r$p$salt$hash`, base64url parts. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function passwordMatches(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p), maxmem: PARAMS.maxmem });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A hash compared against when the email is unknown, so a miss costs as long as a wrong password. */
let decoyHash: Promise<string> | undefined;
export function decoyPasswordHash(): Promise<string> {
  decoyHash ??= hashPassword(randomBytes(16).toString('hex'));
  return decoyHash;
}

export async function setUserPassword(db: Queryable, email: string, password: string): Promise<void> {
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw badRequest('password_too_short', `The password must have at least ${MIN_PASSWORD_LENGTH} characters`, [
      { field: 'password', rule: 'min_length', message: `at least ${MIN_PASSWORD_LENGTH} characters` },
    ]);
  }
  const hash = await hashPassword(password);
  const rows = await db.query(sql`UPDATE users SET password_hash = ${hash} WHERE lower(email) = lower(${email}) RETURNING id`);
  if (rows.length === 0) throw notFound('User', email);
}
