import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlaywrightSandbox } from '../../src/browser/playwright-sandbox.js';
import type { BrowserSandbox, BrowserSession } from '../../src/browser/types.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { typeSecretText } from '../../src/toolset/secret-typing.js';
import { neverAborted } from '../support/env.js';
import { startStaticServer, type StaticServer } from '../support/static-server.js';

/**
 * Secrets by element, and spread one character per field (docs/secrets.md#fields), in the DOM
 * of real Chromium: a page of N inputs of maxlength 1 that moves the focus on after each one.
 *
 * - typed by the worker into the first of its boxes, the secret marks every box that took a
 *   character: each reads as the placeholder, also after the page wrote something else into it;
 * - written by the page itself, one character per box at any place among other boxes, the
 *   secret reads nowhere in the read the model is given (the boxes' run reads as the placeholder).
 */

const ROOT = path.resolve('test/fixtures/secret-fields');
const schema = { type: 'object', properties: { pin: { type: 'string', writeOnly: true } } };
let server: StaticServer;
let sandbox: BrowserSandbox;
let session: BrowserSession;

beforeAll(async () => {
  server = await startStaticServer({ root: ROOT });
  sandbox = createPlaywrightSandbox({ logger: createSilentLogger(), hostRules: 'MAP boxes.test 127.0.0.1' });
  session = await sandbox.openSession({ executionId: 'boxes', viewport: { width: 800, height: 600 }, allowedDomains: [`boxes.test:${server.port}`], onBlocked: () => undefined }, neverAborted);
  const opened = await session.navigate(`http://boxes.test:${server.port}/`, neverAborted);
  expect(opened.ok).toBe(true);
});

afterAll(async () => {
  await session?.close();
  await sandbox?.close();
  await server?.close();
});

const tab = () => session.tab()!;
async function run(script: string): Promise<void> {
  const out = await tab().evaluate(`(() => { ${script}; return 'ok'; })()`, 5_000, neverAborted);
  if (!out.ok) throw new Error(out.error);
}
async function read(): Promise<string> {
  const page = await tab().readPage({ filter: 'all', maxChars: 20_000 }, neverAborted);
  if (!page.ok) throw new Error(page.error);
  return page.value.lines.join('\n');
}
const boxValues = (text: string): string[] => [...text.matchAll(/textbox "Box \d+" \[ref_\d+\] value="((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!);

/** A secret of 4 to 8 characters that are neither a quote nor a backslash (the page's boxes take them as typed). */
const secretText = fc.array(fc.constantFrom(...'0123456789abcXYZ'.split('')), { minLength: 4, maxLength: 8 }).map((c) => c.join(''));

describe('secret fields in real Chromium', () => {
  it('marks every box the worker typed a character of the secret into: each reads as the placeholder, whatever the page writes into it later', async () => {
    await fc.assert(
      fc.asyncProperty(secretText, fc.nat(3), fc.constantFrom('7', 'x', ''), async (secret, extra, later) => {
        const n = secret.length + extra;
        await run(`window.build(${n}); document.querySelector('input').focus()`);
        await typeSecretText(session, secret, '{{pin}}', neverAborted);
        // The page changes what the boxes hold: the mark is on the element, not on the value.
        await run(`document.querySelectorAll('input').forEach((b, i) => { if (i < ${secret.length}) b.value = ${JSON.stringify(later)} || b.value; })`);
        const values = boxValues(await read());
        expect(values.slice(0, secret.length)).toEqual(Array.from(secret, () => '{{pin}}'));
        // The boxes after it took nothing and were never marked.
        expect(values.slice(secret.length)).toEqual([]);
      }),
      { numRuns: 12 },
    );
  }, 180_000);

  it('finds the secret written one character per box by the page, at any place among other boxes', async () => {
    await fc.assert(
      fc.asyncProperty(secretText, fc.array(fc.constantFrom(...'qrstuvw'.split('')), { maxLength: 3 }), fc.array(fc.constantFrom(...'qrstuvw'.split('')), { maxLength: 3 }), async (secret, before, after) => {
        const vault = createSecretVault({ pin: secret }, schema);
        const chars = [...before, ...secret, ...after];
        await run(`window.build(${chars.length}); document.querySelectorAll('input').forEach((b, i) => { b.value = ${JSON.stringify(chars)}[i]; })`);
        const raw = await read();
        // The page did spread it: one character per box.
        expect(boxValues(raw).join('')).toBe(chars.join(''));
        const shown = vault.redact(raw);
        expect(boxValues(shown).every((v) => v === '{{pin}}')).toBe(true);
        expect(boxValues(shown).join('')).not.toContain(secret);
      }),
      { numRuns: 12 },
    );
  }, 180_000);
});
