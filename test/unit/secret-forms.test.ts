import { Writable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSecretVault } from '../../src/domain/secrets.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { scrubFromProcessLog } from '../../src/telemetry/log-secrets.js';
import type { JsonSchema } from '../../src/contract/json.js';

// A secret with what pages and transports transform: quotes, a backslash, a double space,
// non-ASCII, and more than 200 characters.
const SECRET = `Pa"ss\\wo  rd-é€<&>'${'x7'.repeat(110)}`;
const schema = { type: 'object', properties: { pw: { type: 'string', writeOnly: true } } };

describe('secret forms (docs/secrets.md#forms)', () => {
  const vault = createSecretVault({ pw: SECRET }, schema);
  const forms: Record<string, string> = {
    'as typed': SECRET,
    'JSON-escaped': JSON.stringify(SECRET),
    'JSON-escaped twice': JSON.stringify(JSON.stringify(SECRET)),
    'JSON with \\u escapes': JSON.stringify(SECRET).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
    'HTML-escaped': SECRET.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/'/g, '&#39;'),
    'percent-encoded': encodeURIComponent(SECRET),
    'form-encoded': new URLSearchParams({ q: SECRET }).toString(),
    'percent-encoded twice': encodeURIComponent(encodeURIComponent(SECRET)),
    'upper-cased': SECRET.toUpperCase(),
    'lower-cased': SECRET.toLowerCase(),
    'whitespace collapsed': SECRET.replace(/\s+/g, ' '),
    base64: Buffer.from(SECRET).toString('base64'),
    'base64 inside a longer value': Buffer.from(`user:${SECRET}`).toString('base64url'),
    'cut at 200 characters': `${SECRET.slice(0, 200)}…`,
    'a leading piece of 8': SECRET.slice(0, 8),
  };
  for (const [name, form] of Object.entries(forms)) {
    it(`redacts the secret ${name}`, () => {
      const out = vault.redact(`before ${form} after`);
      expect(out).toContain('{{pw}}');
      expect(out.startsWith('before ')).toBe(true);
      expect(out).not.toContain('x7x7x7');
      expect(out.toLowerCase()).not.toContain('pa"ss');
      expect(out).not.toMatch(/UGEi|dzc4/); // base64 of its start / of 'w78'... never left over
    });
  }

  it('leaves a leading piece shorter than 8 characters and unrelated text alone', () => {
    expect(vault.redact('Pa"ss\\w and x7x7x7 alone')).toBe('Pa"ss\\w and x7x7x7 alone');
  });

  it('keeps a character next to whitespace or a backslash apart from their encodings', () => {
    // A `+` after a tab (form encoding writes a space as `+`), a control character after a backslash (`\\\\u0001`).
    const tricky = 'ab\t+cd\\\u0001efgh+ij\u2029kl';
    const vault = createSecretVault({ pw: tricky }, schema);
    for (const form of [new URLSearchParams({ q: tricky }).toString().slice(2), JSON.stringify(tricky), encodeURIComponent(tricky)]) {
      expect(vault.redact(`<${form}>`)).toMatch(/^<"?\{\{pw\}\}"?>$/);
    }
  });

  it('redacts configured keys in their forms too', () => {
    const keys = createSecretVault(undefined, undefined, ['sk-ant-api03-abcdefgh']);
    expect(keys.redact(`k=${encodeURIComponent('SK-ANT-API03-ABCDEFGH')}`)).toBe('k=[REDACTED]');
  });
});

describe('combined forms (docs/secrets.md#forms)', () => {
  it('redacts a secret with double spaces that a page shows with whitespace collapsed and cut short', () => {
    const vault = createSecretVault({ pw: 'ab  cd  ef  gh  ij' }, schema);
    // 9 characters of the secret ("ab  cd  e"), 7 as shown.
    expect(vault.redact('<ab cd e…>')).toBe('<{{pw}}…>');
    expect(vault.redact('<ab cd ef gh i…>')).toBe('<{{pw}}…>');
  });

  it('redacts a secret escaped, then cut short', () => {
    const vault = createSecretVault({ pw: 'a "b" c <d> e&f' }, schema);
    // 8 characters as shown, 6 of the secret.
    expect(vault.redact('<a \\"b\\" …>')).toBe('<{{pw}}…>');
    expect(vault.redact('<a%20%22b%…>')).toBe('<{{pw}}%…>');
    expect(vault.redact('<a &quot;b&quot;…>')).toBe('<{{pw}}…>');
  });

  /** A secret's characters: what pages and transports change, and plain ones. */
  const char = fc.constantFrom(...'abcXYZ019'.split(''), ' ', '  ', '\t', '\n', '"', "'", '<', '>', '&', '\\', '%', '+', '/', 'é', '€', '😀');
  // Whitespace around a secret is not part of it (a field trims it; so does the matcher).
  const secretText = fc
    .tuple(fc.constantFrom('q', 'Z', '7', 'é'), fc.array(char, { minLength: 9, maxLength: 30 }), fc.constantFrom('k', '"', '€'))
    .map(([first, rest, last]) => first + rest.join('') + last);
  const escapes: Record<string, (text: string) => string> = {
    none: (t) => t,
    json: (t) => JSON.stringify(t).slice(1, -1),
    'json twice': (t) => JSON.stringify(JSON.stringify(t).slice(1, -1)).slice(1, -1),
    html: (t) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;'),
    percent: (t) => encodeURIComponent(t),
    form: (t) => new URLSearchParams({ q: t }).toString().slice(2),
  };
  const cases = (['none', 'upper', 'lower'] as const).flatMap((casing) => Object.keys(escapes).map((escape) => ({ casing, escape })));

  it('for any secret, collapsed or not, escaped any way, cased any way, then cut short: nothing of it is left but a piece of one character', () => {
    fc.assert(
      fc.property(secretText, fc.constantFrom(...cases), fc.boolean(), fc.nat(), fc.nat(), (secretValue, { casing, escape }, collapse, cut, partial) => {
        const vault = createSecretVault({ pw: secretValue }, schema);
        const chars = [...secretValue];
        const k = 1 + (cut % chars.length);
        const shape = (text: string) => {
          const collapsed = collapse ? text.replace(/\s+/g, ' ') : text;
          const cased = casing === 'upper' ? collapsed.toUpperCase() : casing === 'lower' ? collapsed.toLowerCase() : collapsed;
          return escapes[escape]!(cased);
        };
        const piece = shape(chars.slice(0, k).join(''));
        // A cut may fall inside the next character's encoding.
        const next = k < chars.length ? shape(chars[k]!) : '';
        const tail = next.slice(0, partial % Math.max(1, next.length));
        // A leading piece counts from 8 characters of the secret, or of the text as shown.
        fc.pre(k === chars.length || k >= 8 || (!collapse && piece.length >= 8));
        const out = vault.redact(`«${piece}${tail}»`);
        expect(out.startsWith('«{{pw}}')).toBe(true);
        const rest = out.slice('«{{pw}}'.length, -1);
        expect(tail.endsWith(rest)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('secret marks found as the validator applies the schema', () => {
  const cases: Array<[string, JsonSchema, unknown, string]> = [
    ['$ref/$defs', { $defs: { pw: { type: 'string', writeOnly: true } }, type: 'object', properties: { login: { $ref: '#/$defs/pw' } } }, { login: 'hunter2-ref' }, 'login'],
    ['definitions + $ref (draft 07)', { definitions: { s: { 'x-secret': true } }, properties: { a: { $ref: '#/definitions/s' } } }, { a: 'hunter2-def' }, 'a'],
    ['additionalProperties', { type: 'object', additionalProperties: { type: 'string', 'x-secret': true } }, { token: 'hunter2-add' }, 'token'],
    ['patternProperties', { type: 'object', patternProperties: { '^key_': { writeOnly: true } } }, { key_1: 'hunter2-pat' }, 'key_1'],
    ['prefixItems', { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'array', prefixItems: [{ type: 'string' }, { type: 'string', writeOnly: true }] }, ['user', 'hunter2-pre'], '1'],
    ['items', { type: 'object', properties: { pins: { type: 'array', items: { 'x-secret': true } } } }, { pins: ['hunter2-item'] }, 'pins.0'],
    ['if/then', { type: 'object', if: { properties: { kind: { const: 'card' } } }, then: { properties: { number: { writeOnly: true } } } }, { kind: 'card', number: 'hunter2-then' }, 'number'],
    ['anyOf', { anyOf: [{ type: 'object', properties: { p: { 'x-secret': true } } }] }, { p: 'hunter2-any' }, 'p'],
  ];
  for (const [name, schemaOf, payload, path] of cases) {
    it(`finds a mark through ${name}`, () => {
      const vault = createSecretVault(payload, schemaOf);
      expect(vault.paths).toEqual([path]);
      expect(JSON.stringify(vault.maskedPayload)).not.toContain('hunter2');
      expect(JSON.stringify(vault.maskedPayload)).toContain(`{{${path}}}`);
    });
  }

  it('a TOTP seed marked through $ref is a secret that types a code', () => {
    const seed = 'JBSWY3DPEHPK3PXP';
    const vault = createSecretVault({ otp: seed }, { $defs: { code: { type: 'string', format: 'totp' } }, properties: { otp: { $ref: '#/$defs/code' } } }, [], { now: () => 0 });
    expect(vault.oneTimeCodePaths).toEqual(['otp']);
    expect(vault.reveal('{{otp}}')).toMatch(/^\d{6}$/);
    expect(vault.redact(`seed ${seed.toLowerCase()}`)).toBe('seed {{otp}}');
  });

  it('a property merely named like a mark is not a secret', () => {
    const vault = createSecretVault({ writeOnly: 'plain', 'x-secret': 'plain' }, { properties: { writeOnly: { type: 'string' }, 'x-secret': true } });
    expect(vault.paths).toEqual([]);
  });
});

describe('the process log', () => {
  it('scrubs every live secret from every line, whatever field carries it, as valid JSON', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = createLogger({ level: 'info', destination: sink, secrets: ['sk-process-key-0001'] });
    const vault = createSecretVault({ pw: SECRET }, schema);
    const stop = scrubFromProcessLog(vault.redact);
    const beacon = `https://analytics.example/collect?v=${encodeURIComponent(SECRET)}`;
    logger.info({ url: beacon, layer: 'network', nested: { k: 'sk-process-key-0001' } }, 'request blocked');
    stop();
    logger.info({ url: 'x7x7x7x7x7x7x7x7' }, 'after the run');
    const first = JSON.parse(lines[0]!) as { url: string; nested: { k: string } };
    expect(first.url).toBe('https://analytics.example/collect?v={{pw}}');
    expect(first.nested.k).toBe('[REDACTED]');
    expect(lines[0]).not.toContain('x7x7x7');
    expect(JSON.parse(lines[1]!).url).toBe('x7x7x7x7x7x7x7x7');
  });
});

describe('display groupings and one character per field (docs/secrets.md#forms)', () => {
  const alnum = fc.constantFrom(...'0123456789ABCDEFabcdef'.split(''));
  const secretText = fc.array(alnum, { minLength: 6, maxLength: 34 }).map((c) => c.join(''));
  const separator = fc.constantFrom(' ', '-', '.', '/', '\u00a0', ' - ', '\u2013');
  /** The secret cut into groups of 2–6 characters (the last may be shorter), joined by one separator. */
  const grouped = fc.tuple(secretText, fc.array(fc.integer({ min: 2, max: 6 }), { minLength: 1, maxLength: 20 }), separator).map(([secret, sizes, sep]) => {
    const groups: string[] = [];
    let at = 0;
    for (let i = 0; at < secret.length; i += 1) {
      const size = sizes[i % sizes.length]!;
      groups.push(secret.slice(at, at + size));
      at += size;
    }
    return { secret, shown: groups.join(sep) };
  });
  const escapes: Record<string, (text: string) => string> = {
    none: (t) => t,
    json: (t) => JSON.stringify(t).slice(1, -1),
    html: (t) => t.replace(/\u00a0/g, '&nbsp;'),
    percent: (t) => encodeURIComponent(t),
    form: (t) => new URLSearchParams({ q: t }).toString().slice(2),
  };

  it('redacts any grouping of a secret by 2–6 characters, split by spaces, dashes, dots or slashes, escaped any way and cased any way', () => {
    fc.assert(
      fc.property(grouped, fc.constantFrom(...Object.keys(escapes)), fc.constantFrom('none', 'upper', 'lower'), ({ secret, shown }, escape, casing) => {
        const vault = createSecretVault({ pw: secret }, schema);
        const cased = casing === 'upper' ? shown.toUpperCase() : casing === 'lower' ? shown.toLowerCase() : shown;
        expect(vault.redact(`Card ${escapes[escape]!(cased)}.`)).toBe('Card {{pw}}.');
      }),
      { numRuns: 1500 },
    );
  });

  it('redacts the examples of the review: a card number and an IBAN grouped by four', () => {
    const vault = createSecretVault({ card: '4111111111111111', iban: 'DE89370400440532013000' }, { type: 'object', properties: { card: { writeOnly: true }, iban: { writeOnly: true } } });
    expect(vault.redact('Card 4111 1111 1111 1111, IBAN DE89 3704 0044 0532 0130 00')).toBe('Card {{card}}, IBAN {{iban}}');
    expect(vault.redact('4111-1111-1111-1111 4111.1111.1111.1111 DE89/3704/0044/0532/0130/00')).toBe('{{card}} {{card}} {{iban}}');
  });

  it('redacts groupings by the invisible separators pages break long numbers with, and by underscores or commas', () => {
    const vault = createSecretVault({ card: '4111111111111111' }, { type: 'object', properties: { card: { writeOnly: true } } });
    for (const sep of ['\u00ad', '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '_', ',', '&shy;', '&#x200b;', '%C2%AD']) {
      const shown = ['4111', '1111', '1111', '1111'].join(sep);
      expect(vault.redact(`Card ${shown}.`), JSON.stringify(sep)).toBe('Card {{card}}.');
    }
  });

  it('leaves numbers that are not the secret alone, grouped or not', () => {
    const vault = createSecretVault({ pw: '4111111111111111' }, schema);
    expect(vault.redact('Order 4111 2222 3333 4444 and 4111 11')).toBe('Order 4111 2222 3333 4444 and 4111 11');
  });

  /** A read of N one-character fields, as read_page writes them, with the secret at any place among them. */
  const placement = fc.tuple(
    fc.array(fc.constantFrom(...'0123456789'.split('')), { minLength: 4, maxLength: 10 }).map((c) => c.join('')),
    fc.array(fc.constantFrom(...'qrstu"\\'.split('')), { maxLength: 4 }),
    fc.array(fc.constantFrom(...'qrstu'.split('')), { maxLength: 4 }),
    fc.boolean(),
  );
  const quote = (c: string) => JSON.stringify(c);
  const pinSchema = { type: 'object', properties: { pin: { type: 'string', writeOnly: true } } };

  it('redacts a secret spread one character per field across adjacent fields, wherever it sits among them', () => {
    fc.assert(
      fc.property(placement, ([secret, before, after, labelled]) => {
        const vault = createSecretVault({ pin: secret }, pinSchema);
        const chars = [...before, ...secret, ...after];
        const lines = chars.map((c, i) => `${labelled ? `  text "Digit ${i + 1}"\n` : ''}  textbox "Box ${i + 1}" [ref_${i + 1}] value=${quote(c)}`);
        const text = `group "Code" [ref_0]\n${lines.join('\n')}\n  button "Go" [ref_99]`;
        const out = vault.redact(text);
        const values = [...out.matchAll(/value="((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!);
        expect(values).toHaveLength(chars.length);
        expect(values.every((v) => v === '{{pin}}')).toBe(true);
        // A field of another length between them breaks the run: nothing else is changed.
        const broken = `${lines.slice(0, before.length + 2).join('\n')}\n  textbox [ref_50] value="long value"\n${lines.slice(before.length + 2).join('\n')}`;
        expect(vault.redact(broken)).toContain('value="long value"');
      }),
      { numRuns: 1000 },
    );
  });

  it('leaves one-character fields that do not spell a secret alone', () => {
    const vault = createSecretVault({ pin: '7391' }, { type: 'object', properties: { pin: { type: 'string', writeOnly: true } } });
    const text = ['7', '3', '9', '2'].map((c, i) => `textbox [ref_${i}] value="${c}"`).join('\n');
    expect(vault.redact(text)).toBe(text);
  });
});
