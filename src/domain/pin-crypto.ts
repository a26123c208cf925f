import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/*
 * Secrets at rest (device PINs, bridge keys, idempotent answers): AES-256-GCM under core.secretKey. The stored text is
 * base64(iv ‖ tag ‖ ciphertext); a fresh random IV per call makes equal PINs encrypt differently,
 * and the tag makes any tampering fail decryption instead of yielding a wrong PIN.
 */

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * `context` is bound as associated data (the device id for PINs), so a ciphertext copied onto
 * another row does not decrypt there.
 */
export function encryptSecret(key: Buffer, plaintext: string, context = ''): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64');
}

/** Throws when the text was altered, sealed under another key, or bound to another context. */
export function decryptSecret(key: Buffer, sealed: string, context = ''): string {
  const bytes = Buffer.from(sealed, 'base64');
  if (bytes.length < IV_BYTES + TAG_BYTES) throw new Error('Sealed secret is truncated');
  const decipher = createDecipheriv(ALGORITHM, key, bytes.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
}

/** The keys of a store: `previousSecretKey` is set during a rotation (SVC_SECRET_KEY_PREVIOUS). */
export interface SealingKeys {
  secretKey: Buffer;
  previousSecretKey?: Buffer | undefined;
}

/** Opens a secret sealed under the current key or, during a rotation, under the key being replaced. */
export function openSealed(keys: SealingKeys, sealed: string, context = ''): string {
  try {
    return decryptSecret(keys.secretKey, sealed, context);
  } catch (error) {
    if (!keys.previousSecretKey) throw error;
    return decryptSecret(keys.previousSecretKey, sealed, context);
  }
}
