import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { profileHeader, type ProfileHeader } from '../contract/profile.js';

/**
 * Browser profiles at rest (docs/profiles.md#at-rest): AES-256-GCM with a fresh 96-bit IV per
 * save, the profile's id and the blob's clear header bound as associated data, so a blob cannot
 * be altered, nor moved to another id, without failing to open. Node's crypto does all of it;
 * only the framing is ours:
 *
 *   "EWPROF1\n" + header JSON + "\n" + IV (12 bytes) + tag (16 bytes) + ciphertext
 *
 * The header holds no value: the key id, when the state was saved, its hosts and counts (what
 * `GET /api/profiles` lists without any key).
 */

const MAGIC = Buffer.from('EWPROF1\n');
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

export interface ProfileKey {
  id: string;
  key: Buffer;
}

/** PROFILE_KEYS parsed: the first key encrypts, every key decrypts. */
export interface ProfileKeyring {
  current: ProfileKey;
  byId: ReadonlyMap<string, Buffer>;
}

/**
 * Parses `keyId:base64key[,keyId:base64key…]`. Messages name the entry by position and key id,
 * never by its key material (this text may end up in a log).
 */
export function parseProfileKeys(text: string): ProfileKeyring {
  const entries = text.split(',').map((e) => e.trim()).filter((e) => e !== '');
  if (entries.length === 0) throw new Error('must list at least one keyId:base64key');
  const keys: ProfileKey[] = [];
  entries.forEach((entry, index) => {
    const colon = entry.indexOf(':');
    const id = colon < 0 ? '' : entry.slice(0, colon).trim();
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(id)) throw new Error(`entry ${index + 1}: must be keyId:base64key, the key id 1 to 64 letters, digits, ".", "_" or "-"`);
    const encoded = entry.slice(colon + 1).trim();
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) throw new Error(`key "${id}": is not base64`);
    const key = Buffer.from(encoded, 'base64');
    if (key.length !== KEY_BYTES) throw new Error(`key "${id}": must be 32 bytes (44 base64 characters), it is ${key.length} bytes`);
    if (keys.some((k) => k.id === id)) throw new Error(`key "${id}": is listed twice`);
    keys.push({ id, key });
  });
  return { current: keys[0]!, byId: new Map(keys.map((k) => [k.id, k.key])) };
}

/** Encrypts a profile's state (any JSON) for `id` with the ring's current key. */
export function sealProfile(id: string, state: unknown, ring: ProfileKeyring, meta: Omit<ProfileHeader, 'kid'>): Buffer {
  const written: ProfileHeader = { kid: ring.current.id, ...meta };
  const header = Buffer.from(JSON.stringify(written));
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', ring.current.key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(associatedData(id, header));
  const body = Buffer.concat([cipher.update(JSON.stringify(state), 'utf8'), cipher.final()]);
  return Buffer.concat([MAGIC, header, Buffer.from('\n'), iv, cipher.getAuthTag(), body]);
}

/** The clear header of a blob, or why it is not a profile blob. Not authenticated on its own. */
export function readProfileHeader(blob: Buffer): { ok: true; header: ProfileHeader; headerBytes: Buffer; rest: Buffer } | { ok: false; reason: string } {
  if (blob.length < MAGIC.length || !blob.subarray(0, MAGIC.length).equals(MAGIC)) return { ok: false, reason: 'not a profile blob' };
  const end = blob.indexOf(0x0a, MAGIC.length);
  if (end < 0) return { ok: false, reason: 'the header is cut short' };
  const headerBytes = blob.subarray(MAGIC.length, end);
  let header: unknown;
  try {
    header = JSON.parse(headerBytes.toString('utf8'));
  } catch {
    return { ok: false, reason: 'the header is not JSON' };
  }
  const parsed = profileHeader.safeParse(header);
  if (!parsed.success) return { ok: false, reason: 'the header lacks its fields' };
  const rest = blob.subarray(end + 1);
  if (rest.length < IV_BYTES + TAG_BYTES) return { ok: false, reason: 'the blob is cut short' };
  return { ok: true, header: parsed.data, headerBytes, rest };
}

/** Decrypts a blob saved for `id`, or says why it cannot be read (the reason holds no value). */
export function openProfile(id: string, blob: Buffer, ring: ProfileKeyring): { ok: true; state: unknown; header: ProfileHeader } | { ok: false; reason: string } {
  const read = readProfileHeader(blob);
  if (!read.ok) return read;
  const key = ring.byId.get(read.header.kid);
  if (!key) return { ok: false, reason: `encrypted with key "${read.header.kid}", which PROFILE_KEYS does not hold` };
  const iv = read.rest.subarray(0, IV_BYTES);
  const tag = read.rest.subarray(IV_BYTES, IV_BYTES + TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(associatedData(id, read.headerBytes));
  decipher.setAuthTag(tag);
  let text: string;
  try {
    text = Buffer.concat([decipher.update(read.rest.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    // GCM says only "unable to authenticate": a wrong key, altered bytes or another id's blob.
    return { ok: false, reason: 'does not authenticate (altered, another profile\'s, or a different key of the same id)' };
  }
  try {
    return { ok: true, state: JSON.parse(text) as unknown, header: read.header };
  } catch {
    return { ok: false, reason: 'the decrypted state is not JSON' };
  }
}

function associatedData(id: string, header: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`execution-worker profile\0${id}\0`), header]);
}
