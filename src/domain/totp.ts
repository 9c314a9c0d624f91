import { createHmac } from 'node:crypto';

/**
 * One-time codes (docs/files-and-codes.md): TOTP, RFC 6238 over HOTP, RFC 4226. A secret input property
 * with `"format": "totp"` holds a seed, either a base32 secret as authenticator apps show it
 * (`JBSW Y3DP EHPK 3PXP`, any case, with or without `=` padding) or the `otpauth://totp/…` URI
 * of its QR code, whose `algorithm`, `digits` and `period` parameters are honoured.
 */

export type TotpAlgorithm = 'SHA1' | 'SHA256' | 'SHA512';

export interface TotpSeed {
  /** The shared secret's bytes. */
  key: Buffer;
  algorithm: TotpAlgorithm;
  digits: number;
  periodSeconds: number;
  /** The secret as base32 (upper case, no padding or spaces), to redact wherever it appears. */
  base32: string;
}

export type TotpSeedResult = { ok: true; seed: TotpSeed } | { ok: false; reason: string };

const DEFAULTS = { algorithm: 'SHA1', digits: 6, periodSeconds: 30 } as const;
const ALGORITHMS: Record<TotpAlgorithm, string> = { SHA1: 'sha1', SHA256: 'sha256', SHA512: 'sha512' };
const BASE32_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
/**
 * RFC 4226 asks for 128 bits and recommends 160; many services still hand out 80-bit seeds (16
 * base32 characters), which authenticator apps accept. Anything shorter is a typo, not a seed.
 */
const MIN_KEY_BYTES = 10;
const MAX_PERIOD_SECONDS = 3_600;

/**
 * Reads a seed. The reasons never quote the value: they end up in error messages, and a seed
 * that is almost right is still a secret.
 */
export function parseTotpSeed(raw: unknown): TotpSeedResult {
  if (typeof raw !== 'string') return { ok: false, reason: 'expected a string: a base32 secret or an otpauth://totp/ URI' };
  const text = raw.trim();
  if (/^otpauth:/i.test(text)) return parseOtpauthUri(text);
  return seedFromBase32(text, DEFAULTS);
}

function parseOtpauthUri(text: string): TotpSeedResult {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: 'not a valid otpauth:// URI' };
  }
  // otpauth is not a special scheme: the type (`totp`, `hotp`) is the URL's host.
  const type = url.host.toLowerCase();
  if (type === 'hotp') return { ok: false, reason: 'an HOTP (counter-based) URI; only time-based otpauth://totp/ codes are supported' };
  if (type !== 'totp') return { ok: false, reason: 'not an otpauth://totp/ URI' };
  const params = url.searchParams;
  const secret = params.get('secret');
  if (secret === null || secret.trim() === '') return { ok: false, reason: 'the otpauth URI has no secret parameter' };

  const algorithmText = (params.get('algorithm') ?? DEFAULTS.algorithm).toUpperCase().replace('-', '');
  if (!(algorithmText in ALGORITHMS)) return { ok: false, reason: 'the otpauth algorithm must be SHA1, SHA256 or SHA512' };
  const digits = readInteger(params.get('digits'), DEFAULTS.digits);
  // RFC 4226 §5.3: at least 6 digits; 8 is the most any authenticator app shows.
  if (digits === undefined || digits < 6 || digits > 8) return { ok: false, reason: 'the otpauth digits parameter must be 6, 7 or 8' };
  const periodSeconds = readInteger(params.get('period'), DEFAULTS.periodSeconds);
  if (periodSeconds === undefined || periodSeconds < 1 || periodSeconds > MAX_PERIOD_SECONDS) {
    return { ok: false, reason: `the otpauth period parameter must be a whole number of seconds from 1 to ${MAX_PERIOD_SECONDS}` };
  }
  return seedFromBase32(secret, { algorithm: algorithmText as TotpAlgorithm, digits, periodSeconds });
}

function readInteger(text: string | null, fallback: number): number | undefined {
  if (text === null || text.trim() === '') return fallback;
  return /^\d{1,6}$/.test(text.trim()) ? Number(text.trim()) : undefined;
}

function seedFromBase32(text: string, options: Omit<TotpSeed, 'key' | 'base32'>): TotpSeedResult {
  const base32 = text.replace(/[\s-]+/g, '').replace(/=+$/, '').toUpperCase();
  const key = decodeBase32(base32);
  if (key === undefined) return { ok: false, reason: 'neither base32 (letters A–Z and digits 2–7) nor an otpauth://totp/ URI' };
  if (key.length < MIN_KEY_BYTES) return { ok: false, reason: `too short for a TOTP seed (at least ${Math.ceil((MIN_KEY_BYTES * 8) / 5)} base32 characters)` };
  return { ok: true, seed: { key, base32, ...options } };
}

/** RFC 4648 base32 without padding; undefined for a character or a length base32 never produces. */
export function decodeBase32(text: string): Buffer | undefined {
  // A final group of 1, 3 or 6 characters cannot come out of any number of whole bytes.
  if (text === '' || [1, 3, 6].includes(text.length % 8)) return undefined;
  const bytes: number[] = [];
  let buffer = 0;
  let bits = 0;
  for (const char of text) {
    const value = BASE32_ALPHABET.indexOf(char);
    if (value < 0) return undefined;
    buffer = ((buffer << 5) | value) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      bytes.push((buffer >> bits) & 0xff);
    }
  }
  return Buffer.from(bytes);
}

/** RFC 4226 HOTP: HMAC of the 8-byte counter, dynamic truncation, `digits` decimal digits. */
export function hotp(key: Buffer, counter: number, options: { algorithm?: TotpAlgorithm; digits?: number } = {}): string {
  const digits = options.digits ?? DEFAULTS.digits;
  const message = Buffer.alloc(8);
  // Counters beyond 2^32 (T for times past 2106 at 30 s, or small periods) need both halves.
  message.writeUInt32BE(Math.floor(counter / 0x1_0000_0000), 0);
  message.writeUInt32BE(counter >>> 0, 4);
  const mac = createHmac(ALGORITHMS[options.algorithm ?? DEFAULTS.algorithm], key).update(message).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fff_ffff;
  return String(binary % 10 ** digits).padStart(digits, '0');
}

/** RFC 6238 TOTP: the code valid at `atMs` (epoch milliseconds). */
export function totp(seed: TotpSeed, atMs: number): string {
  const counter = Math.floor(atMs / 1000 / seed.periodSeconds);
  return hotp(seed.key, counter, { algorithm: seed.algorithm, digits: seed.digits });
}
