import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { ProfileKeyring } from './profile-crypto.js';

/**
 * Small JSON values kept encrypted at rest with the profiles' keys (`PROFILE_KEYS`): AES-256-GCM,
 * a fresh 96-bit IV each time, the purpose and the key id bound as associated data, so a value
 * sealed for one purpose does not open as another. The text form goes in a Redis hash field:
 *
 *   "ewsv1:" + key id + ":" + base64(IV (12 bytes) + tag (16 bytes) + ciphertext)
 *
 * Node's crypto does all of it; only the framing is ours (as for profiles: profile-crypto.ts).
 */

const PREFIX = 'ewsv1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export function sealValue(purpose: string, value: unknown, ring: ProfileKeyring): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', ring.current.key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(associatedData(purpose, ring.current.id));
  const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return `${PREFIX}${ring.current.id}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
}

/** The value sealed for `purpose`, or why it cannot be read (the reason holds no value). */
export function openValue(purpose: string, sealed: string, ring: ProfileKeyring | undefined): { ok: true; value: unknown } | { ok: false; reason: string } {
  if (!sealed.startsWith(PREFIX)) return { ok: false, reason: 'not a sealed value' };
  const rest = sealed.slice(PREFIX.length);
  const colon = rest.indexOf(':');
  const kid = rest.slice(0, colon);
  const bytes = Buffer.from(rest.slice(colon + 1), 'base64');
  if (colon < 0 || bytes.length < IV_BYTES + TAG_BYTES) return { ok: false, reason: 'the sealed value is cut short' };
  if (!ring) return { ok: false, reason: `it is encrypted with key "${kid}", and PROFILE_KEYS is not set` };
  const key = ring.byId.get(kid);
  if (!key) return { ok: false, reason: `it is encrypted with key "${kid}", which PROFILE_KEYS does not hold` };
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
  decipher.setAAD(associatedData(purpose, kid));
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  let text: string;
  try {
    text = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return { ok: false, reason: 'it does not authenticate (altered, or another key of the same id)' };
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, reason: 'the decrypted value is not JSON' };
  }
}

function associatedData(purpose: string, kid: string): Buffer {
  return Buffer.from(`execution-worker sealed value\0${purpose}\0${kid}`);
}
