import { describe, expect, it } from 'vitest';
import { compileSchema } from '../../src/domain/json-schema.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { decodeBase32, hotp, parseTotpSeed, totp, type TotpSeed } from '../../src/domain/totp.js';

/** RFC 6238 Appendix B: the seeds are ASCII digits, 20, 32 and 64 bytes long. */
const RFC_SEEDS = {
  SHA1: Buffer.from('12345678901234567890'),
  SHA256: Buffer.from('12345678901234567890123456789012'),
  SHA512: Buffer.from('1234567890123456789012345678901234567890123456789012345678901234'),
} as const;

/** [time (s), SHA1, SHA256, SHA512], 8 digits, 30 s steps (RFC 6238 Appendix B). */
const RFC_6238_VECTORS: Array<[number, string, string, string]> = [
  [59, '94287082', '46119246', '90693936'],
  [1111111109, '07081804', '68084774', '25091201'],
  [1111111111, '14050471', '67062674', '99943326'],
  [1234567890, '89005924', '91819424', '93441116'],
  [2000000000, '69279037', '90698825', '38618901'],
  [20000000000, '65353130', '77737706', '47863826'],
];

/** RFC 4226 Appendix D: HOTP of the 20-byte seed for counters 0…9, 6 digits. */
const RFC_4226_VECTORS = ['755224', '287082', '359152', '969429', '338314', '254676', '287922', '162583', '399871', '520489'];

/** base32 of RFC_SEEDS.SHA1. */
const RFC_SHA1_BASE32 = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';

function seed(algorithm: keyof typeof RFC_SEEDS, digits = 8): TotpSeed {
  return { key: RFC_SEEDS[algorithm], algorithm, digits, periodSeconds: 30, base32: '' };
}

describe('HOTP (RFC 4226)', () => {
  it('gives the appendix D values', () => {
    RFC_4226_VECTORS.forEach((code, counter) => expect(hotp(RFC_SEEDS.SHA1, counter), `counter ${counter}`).toBe(code));
  });
});

describe('TOTP (RFC 6238)', () => {
  it.each(RFC_6238_VECTORS)('at %i s gives the appendix B codes for SHA1, SHA256 and SHA512', (seconds, sha1, sha256, sha512) => {
    expect(totp(seed('SHA1'), seconds * 1000)).toBe(sha1);
    expect(totp(seed('SHA256'), seconds * 1000)).toBe(sha256);
    expect(totp(seed('SHA512'), seconds * 1000)).toBe(sha512);
  });

  it('keeps a code for its whole period and changes at the boundary', () => {
    const s = seed('SHA1', 6);
    expect(totp(s, 60_000)).toBe(totp(s, 89_999));
    expect(totp(s, 90_000)).not.toBe(totp(s, 89_999));
    // 6 digits are the last 6 of the 8-digit code (same truncation, smaller modulus).
    expect(totp(s, 59_000)).toBe('287082');
  });
});

describe('seeds', () => {
  it('reads base32 with or without padding, spaces, hyphens and in any case', () => {
    for (const text of [RFC_SHA1_BASE32, RFC_SHA1_BASE32.toLowerCase(), `${RFC_SHA1_BASE32}====`, 'gezd gnbv gy3t qojq gezd gnbv gy3t qojq', 'GEZDG-NBVGY-3TQOJ-QGEZD-GNBVG-Y3TQO-JQ']) {
      const parsed = parseTotpSeed(text);
      expect(parsed.ok, text).toBe(true);
      if (parsed.ok) {
        expect(parsed.seed.key).toEqual(RFC_SEEDS.SHA1);
        expect(parsed.seed).toMatchObject({ algorithm: 'SHA1', digits: 6, periodSeconds: 30, base32: RFC_SHA1_BASE32 });
      }
    }
  });

  it('reads otpauth://totp URIs with their algorithm, digits and period', () => {
    const base32 = (key: Buffer) => encodeBase32(key);
    const uri = `otpauth://totp/ACME%20Co:alice@example.com?secret=${base32(RFC_SEEDS.SHA256)}&issuer=ACME&algorithm=SHA256&digits=8&period=60`;
    const parsed = parseTotpSeed(uri);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.seed).toMatchObject({ algorithm: 'SHA256', digits: 8, periodSeconds: 60 });
    expect(parsed.seed.key).toEqual(RFC_SEEDS.SHA256);
    // 60 s steps: T = floor(1111111109 / 60); the RFC's SHA256 code at 1111111109 s uses T = floor(…/30).
    expect(totp(parsed.seed, 1111111109_000)).toBe(totp({ ...parsed.seed, periodSeconds: 30 }, Math.floor(1111111109 / 60) * 30_000));

    const sha512 = parseTotpSeed(`otpauth://totp/x?secret=${base32(RFC_SEEDS.SHA512)}&algorithm=sha512&digits=8`);
    expect(sha512.ok && totp(sha512.seed, 59_000)).toBe('90693936');
    const defaults = parseTotpSeed(`OTPAUTH://TOTP/x?secret=${RFC_SHA1_BASE32.toLowerCase()}`);
    expect(defaults.ok && defaults.seed).toMatchObject({ algorithm: 'SHA1', digits: 6, periodSeconds: 30 });
  });

  it.each([
    ['not base32', 'hello world 1', /neither base32/],
    ['too short', 'JBSWY3DP', /too short/],
    ['impossible length', 'GEZDGNBVGY3TQOJQG', /neither base32/],
    ['not a string', 123456, /expected a string/],
    ['an HOTP URI', `otpauth://hotp/x?secret=${RFC_SHA1_BASE32}&counter=1`, /HOTP/],
    ['a URI without secret', 'otpauth://totp/x?issuer=y', /no secret/],
    ['an unknown algorithm', `otpauth://totp/x?secret=${RFC_SHA1_BASE32}&algorithm=MD5`, /SHA1, SHA256 or SHA512/],
    ['9 digits', `otpauth://totp/x?secret=${RFC_SHA1_BASE32}&digits=9`, /6, 7 or 8/],
    ['a zero period', `otpauth://totp/x?secret=${RFC_SHA1_BASE32}&period=0`, /period/],
  ])('refuses %s with a reason that does not quote the seed', (_what, value, reason) => {
    const parsed = parseTotpSeed(value);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.reason).toMatch(reason);
    if (typeof value === 'string') expect(parsed.reason).not.toContain(value);
  });

  it('decodes base32 as RFC 4648 does', () => {
    expect(decodeBase32('MZXW6YTBOI')?.toString()).toBe('foobar');
    expect(decodeBase32('MZXW6YQ')?.toString()).toBe('foob');
    expect(decodeBase32('MZXW6YT1')).toBeUndefined();
  });
});

describe('one-time codes in the secret vault', () => {
  const schema = { type: 'object', properties: { user: { type: 'string' }, mfa: { type: 'string', format: 'totp', 'x-secret': true } } };

  it('masks the seed, types the code of the moment, and redacts seed and codes', () => {
    let clock = 59_000;
    const vault = createSecretVault({ user: 'alice', mfa: `otpauth://totp/A?secret=${RFC_SHA1_BASE32}` }, schema, [], { now: () => clock });
    expect(vault.maskedPayload).toEqual({ user: 'alice', mfa: '{{mfa}}' });
    expect(vault.oneTimeCodePaths).toEqual(['mfa']);
    expect(vault.reveal('{{mfa}}')).toBe('287082');
    clock = 1111111109_000;
    expect(vault.reveal('code: {{ mfa }}')).toBe('code: 081804');
    // Both codes typed so far, the seed and its URI are scrubbed from anything written.
    expect(vault.redact('echo 287082 and 081804')).toBe('echo {{mfa}} and {{mfa}}');
    expect(vault.redact(`seed ${RFC_SHA1_BASE32} in otpauth://totp/A?secret=${RFC_SHA1_BASE32}`)).toBe('seed {{mfa}} in {{mfa}}');
  });

  it('treats format "totp" as secret even without a marker', () => {
    const vault = createSecretVault({ code: RFC_SHA1_BASE32 }, { type: 'object', properties: { code: { type: 'string', format: 'totp' } } }, [], { now: () => 59_000 });
    expect(vault.maskedPayload).toEqual({ code: '{{code}}' });
    expect(vault.reveal('{{code}}')).toBe('287082');
  });

  it('refuses a bad seed with invalid_input naming the property, never the value', () => {
    const bad = 'not-a-seed-0000';
    expect(() => createSecretVault({ login: { mfa: bad } }, { type: 'object', properties: { login: { type: 'object', properties: { mfa: { type: 'string', format: 'totp' } } } } })).toThrow(
      expect.objectContaining({ code: 'invalid_input', message: expect.stringMatching(/^input login\.mfa is not a usable TOTP seed: /) }),
    );
    try {
      createSecretVault({ mfa: bad }, schema);
    } catch (error) {
      expect((error as Error).message).not.toContain(bad);
    }
  });

  it('is a format the payload schema accepts, and a bad seed fails it with the reason at its path', () => {
    const validate = compileSchema(schema);
    expect(validate({ user: 'a', mfa: RFC_SHA1_BASE32 })).toEqual({ ok: true });
    const check = validate({ user: 'a', mfa: 'JBSWY3DP' });
    expect(check).toEqual({ ok: false, errors: expect.stringMatching(/^\/mfa is not a usable TOTP seed: too short/) });
  });
});

function encodeBase32(bytes: Buffer): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const byte of bytes) bits += byte.toString(2).padStart(8, '0');
  let out = '';
  for (let i = 0; i < bits.length; i += 5) out += alphabet[parseInt(bits.slice(i, i + 5).padEnd(5, '0'), 2)];
  return out;
}
