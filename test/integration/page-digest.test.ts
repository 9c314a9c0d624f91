import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPlaywrightSandbox } from '../../src/browser/playwright-sandbox.js';
import type { BrowserSandbox, BrowserSession } from '../../src/browser/types.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { neverAborted } from '../support/env.js';
import { startStaticServer, type StaticServer } from '../support/static-server.js';

/**
 * The page digest the stuck-loop guard compares (docs/action-spaces.md#stuck-loops), on real
 * Chromium: each change of what the page shows (text, a field's value, a box checked, an
 * option chosen, an element shown, a panel or the page scrolled, the title, the focus, in a
 * shadow root or a frame too, a frame's text, a canvas's pixels, the text and focus of a frame
 * of another site) changes it; a change
 * the page does not show in its text or fields (a colour, an attribute) and no change at all
 * leave it as it was; undoing a change gives the first digest back.
 */

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/sites/stuck');
let server: StaticServer;
let sandbox: BrowserSandbox;
let session: BrowserSession;

beforeAll(async () => {
  server = await startStaticServer({ root: ROOT });
  sandbox = createPlaywrightSandbox({ logger: createSilentLogger(), hostRules: 'MAP digest.test 127.0.0.1,MAP other.test 127.0.0.1' });
  session = await sandbox.openSession(
    { executionId: 'digest', viewport: { width: 800, height: 600 }, allowedDomains: [`digest.test:${server.port}`, `other.test:${server.port}`], onBlocked: () => undefined },
    neverAborted,
  );
});

afterAll(async () => {
  await session?.close();
  await sandbox?.close();
  await server?.close();
});

beforeEach(async () => {
  const opened = await session.navigate(`http://digest.test:${server.port}/digest.html`, neverAborted);
  expect(opened.ok).toBe(true);
  await session.settle(neverAborted);
});

const digest = () => session.tab()!.contentDigest(neverAborted);
/** Runs a script in the page and waits for the scroll events it caused (they are dispatched on the next frame). */
async function change(script: string): Promise<void> {
  const out = await session.tab()!.evaluate(`(async () => { ${script}; await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))); return 'ok'; })()`, 5_000, neverAborted);
  if (!out.ok) throw new Error(out.error);
}

const $ = (id: string) => `document.getElementById(${JSON.stringify(id)})`;
/** Each change with whether the page shows it, and how to undo it where undoing gives the same page back. */
const CHANGES: Array<{ name: string; script: string; shown: boolean; undo?: string }> = [
  { name: 'a paragraph\'s text', script: `${$('text')}.textContent = 'Four items in the basket'`, shown: true, undo: `${$('text')}.textContent = 'Three items in the basket'` },
  { name: 'an input\'s value', script: `${$('name')}.value = 'Grace'`, shown: true, undo: `${$('name')}.value = 'Ada'` },
  { name: 'a box checked', script: `${$('agree')}.checked = true`, shown: true, undo: `${$('agree')}.checked = false` },
  { name: 'an option chosen', script: `${$('size')}.value = 'M'`, shown: true, undo: `${$('size')}.value = 'S'` },
  { name: 'a textarea\'s value', script: `${$('notes')}.value = 'second note'`, shown: true, undo: `${$('notes')}.value = 'first note'` },
  { name: 'a hidden element shown', script: `${$('hidden')}.style.display = 'block'`, shown: true, undo: `${$('hidden')}.style.display = 'none'` },
  { name: 'the title', script: `document.title = 'Digest fixture (2)'`, shown: true, undo: `document.title = 'Digest fixture'` },
  // Where an inner panel is scrolled to is part of the digest.
  { name: 'an inner panel scrolled', script: `${$('panel')}.scrollTop = 200`, shown: true },
  { name: 'the page scrolled', script: `window.scrollTo(0, 500)`, shown: true },
  { name: 'the focus moved to a field', script: `${$('name')}.focus()`, shown: true, undo: `${$('name')}.blur()` },
  { name: 'the focus moved inside a shadow root', script: `${$('host')}.shadowRoot.getElementById('second').focus()`, shown: true, undo: `${$('host')}.shadowRoot.getElementById('second').blur()` },
  { name: 'the focus moved inside a frame', script: `${$('inner')}.contentDocument.getElementById('inner-other').focus()`, shown: true, undo: `${$('inner')}.contentDocument.getElementById('inner-other').blur(); ${$('inner')}.blur()` },
  { name: 'a frame\'s text', script: `${$('inner')}.contentDocument.getElementById('line').textContent = 'Inner line two'`, shown: true, undo: `${$('inner')}.contentDocument.getElementById('line').textContent = 'Inner line one'` },
  { name: 'a frame\'s field', script: `${$('inner')}.contentDocument.getElementById('inner-field').value = 'y'`, shown: true, undo: `${$('inner')}.contentDocument.getElementById('inner-field').value = 'x'` },
  { name: 'a canvas drawn on', script: `${$('drawing')}.getContext('2d').fillStyle = '#000'; ${$('drawing')}.getContext('2d').fillRect(100, 50, 2, 2)`, shown: true, undo: `${$('drawing')}.getContext('2d').fillStyle = '#fff'; ${$('drawing')}.getContext('2d').fillRect(0, 0, 400, 200)` },
  { name: 'a colour', script: `${$('colour')}.style.color = 'rgb(200, 0, 0)'`, shown: false },
  { name: 'an attribute', script: `${$('text')}.setAttribute('data-seen', 'yes')`, shown: false },
  { name: 'nothing', script: 'void 0', shown: false },
];

describe('the page digest', () => {
  for (const c of CHANGES) {
    it(`${c.shown ? 'changes with' : 'stays the same after'} ${c.name}`, async () => {
      const before = await digest();
      expect(await digest()).toBe(before);
      await change(c.script);
      const after = await digest();
      if (c.shown) expect(after).not.toBe(before);
      else expect(after).toBe(before);
      if (c.undo) {
        await change(c.undo);
        expect(await digest()).toBe(before);
      }
    });
  }

  it('a scroll that cannot move the page (already at its end) leaves it as it was', async () => {
    await change('window.scrollTo(0, document.documentElement.scrollHeight)');
    const atEnd = await digest();
    await change('window.scrollBy(0, 300)');
    expect(await digest()).toBe(atEnd);
  });

  it('a frame of another site: its text and its focus are part of the digest, read in its own document', async () => {
    const opened = await session.navigate(`http://digest.test:${server.port}/digest-frames.html`, neverAborted);
    expect(opened.ok).toBe(true);
    await session.settle(neverAborted);
    await change('await window.otherReady');
    /** Asks the frame to make a change and waits until it says it made it. */
    const ask = (what: string) =>
      change(`await new Promise((done) => { addEventListener('message', (e) => e.data === 'done' && done()); document.getElementById('other').contentWindow.postMessage(${JSON.stringify(what)}, '*'); })`);
    const before = await digest();
    expect(await digest()).toBe(before);
    await ask('nothing');
    expect(await digest()).toBe(before);
    await ask('text');
    const texted = await digest();
    expect(texted).not.toBe(before);
    await ask('focus-a');
    const onA = await digest();
    expect(onA).not.toBe(texted);
    await ask('focus-b');
    expect(await digest()).not.toBe(onA);
    await ask('focus-a');
    expect(await digest()).toBe(onA);
  });
});
