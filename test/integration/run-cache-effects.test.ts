/**
 * Effects (docs/run-cache.md#effects), as property tests on real Chromium: pages of toggles —
 * disclosures (`aria-expanded`), checkboxes, switches (`role="switch"`, `aria-checked`) — in
 * random states when a run clicks them, and in random states again when that run is replayed.
 * Whatever the states, the replay leaves every toggle in the state the earlier run left it:
 * it clicks a toggle the earlier run found as it is now, and never one already as that run left
 * it (a click there would undo it).
 */
import { rm } from 'node:fs/promises';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countEvents } from '../../src/execution/counters.js';
import type { BrowserSandbox, BrowserSession } from '../../src/browser/types.js';
import { createBrowser } from '../../src/compose.js';
import { loadConfig } from '../../src/config/schema.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { buildEntry } from '../../src/run-cache/entry.js';
import { replaySteps } from '../../src/run-cache/replay.js';
import { inputLeaves } from '../../src/run-cache/values.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { createActionSpace } from '../../src/toolset/create.js';
import type { ActionSpace, ActionTrace } from '../../src/toolset/types.js';
import { hostRules, tempDir } from '../support/env.js';
import { heardEvents } from '../support/heard-events.js';
import { startStaticServer, type StaticServer } from '../support/static-server.js';

const KINDS = ['disclosure', 'checkbox', 'switch', 'disclosure', 'checkbox', 'switch'] as const;
const HOST = 'toggles.test';

/** The page: each toggle in the state the query gives (`?s=1001…`), each click counted. */
function page(states: string): string {
  const toggles = KINDS.map((kind, i) => {
    const on = states[i] === '1';
    if (kind === 'disclosure') return `<button type="button" id="t${i}" aria-expanded="${on}" onclick="this.setAttribute('aria-expanded', String(this.getAttribute('aria-expanded') !== 'true')); count(${i})">Panel ${i}</button>`;
    if (kind === 'checkbox') return `<label><input type="checkbox" id="t${i}" ${on ? 'checked' : ''} onclick="count(${i})"> Option ${i}</label>`;
    return `<button type="button" role="switch" id="t${i}" aria-checked="${on}" onclick="this.setAttribute('aria-checked', String(this.getAttribute('aria-checked') !== 'true')); count(${i})">Switch ${i}</button>`;
  });
  return `<!doctype html><html><head><title>Toggles</title></head><body><main>${toggles.map((t) => `<p>${t}</p>`).join('')}</main>
<script>window.clicks = ${JSON.stringify(KINDS.map(() => 0))}; function count(i) { window.clicks[i]++; }</script></body></html>`;
}

let server: StaticServer;
let browser: BrowserSandbox;
let dir: string;
const signal = new AbortController().signal;

beforeAll(async () => {
  dir = await tempDir('run-cache-effects');
  server = await startStaticServer({
    root: dir,
    handle: (req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(page(url.searchParams.get('s') ?? ''));
      return true;
    },
  });
  browser = createBrowser(loadConfig({ ANTHROPIC_API_KEY: 'sk-test', BROWSER_HOST_RULES: hostRules(HOST), WORK_DIR: dir, VIDEO_ENABLED: 'false', LOG_LEVEL: 'silent' }), createSilentLogger());
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function open(states: boolean[]): Promise<{ session: BrowserSession; space: ActionSpace }> {
  const session = await browser.openSession({ executionId: 'effects', viewport: { width: 1000, height: 700 }, allowedDomains: [HOST], onBlocked: () => {} }, signal);
  const space = createActionSpace(
    { kind: 'browser', computer: { type: 'computer_toolset_20260801', zoom: true }, images: { maxEdgePx: 2000, maxPixels: 3_750_000 } },
    { session, secrets: createSecretVault({}, undefined), allowJavascript: false },
  );
  const opened = await session.navigate(`http://${HOST}:${server.port}/toggles?s=${states.map(Number).join('')}`, signal);
  if (!opened.ok) throw new Error(opened.error);
  await session.settle(signal);
  return { session, space };
}

/** Each toggle's state as the page holds it, and how often it was clicked. */
async function statesOf(session: BrowserSession): Promise<{ on: boolean[]; clicks: number[] }> {
  const tab = session.tab()!;
  const text = await tab.evaluate(
    `JSON.stringify({ on: ${JSON.stringify(KINDS)}.map((kind, i) => { const el = document.getElementById('t' + i); return kind === 'checkbox' ? el.checked : el.getAttribute(kind === 'switch' ? 'aria-checked' : 'aria-expanded') === 'true'; }), clicks: window.clicks })`,
    5_000,
    signal,
  );
  return JSON.parse(String(text.ok ? text.value : '{}')) as { on: boolean[]; clicks: number[] };
}

/** The earlier run: every toggle clicked once, by reference, from the states it found. */
async function recordClicks(found: boolean[]): Promise<ActionTrace[]> {
  const { session, space } = await open(found);
  try {
    const traces: ActionTrace[] = [];
    const read = await space.run({ type: 'tool_use', id: 'toolu_read', name: 'read_page', input: { filter: 'interactive' }, toolset_name: 'browser' }, { signal });
    const text = read.result.content.map((b) => (b.type === 'text' ? b.text : '')).join('\n');
    for (let i = 0; i < KINDS.length; i++) {
      const name = KINDS[i] === 'disclosure' ? `Panel ${i}` : KINDS[i] === 'checkbox' ? `Option ${i}` : `Switch ${i}`;
      const ref = new RegExp(`"${name}" \\[(ref_\\d+)\\]`).exec(text)?.[1];
      if (!ref) throw new Error(`no ${name} in ${text}`);
      const report = await space.run({ type: 'tool_use', id: `toolu_${i}`, name: 'left_click', input: { target: { type: 'ref', ref } }, toolset_name: 'browser' }, { signal });
      if (!report.ok || !report.trace) throw new Error(`the click on ${name} failed: ${report.error ?? 'no trace'}`);
      traces.push(report.trace);
    }
    return traces;
  } finally {
    await session.close();
  }
}

describe('effects: a replay never clicks a toggle into the wrong state', () => {
  it('keeps each click with the state it brought about', { timeout: 120_000 }, async () => {
    const found = [false, true, false, true, true, false];
    const traces = await recordClicks(found);
    expect(traces.map((t) => t.effect)).toEqual(
      KINDS.map((kind, i) => {
        const key = kind === 'disclosure' ? 'expanded' : 'checked';
        return { before: { [key]: found[i] }, after: { [key]: !found[i] } };
      }),
    );
  });

  it('leaves every toggle as the earlier run left it, whatever the states it starts in', { timeout: 600_000 }, async () => {
    const states = fc.array(fc.boolean(), { minLength: KINDS.length, maxLength: KINDS.length });
    await fc.assert(
      fc.asyncProperty(states, states, async (found, now) => {
        const traces = await recordClicks(found);
        const vault = createSecretVault({}, undefined);
        const entry = buildEntry({ versionId: 'v', fingerprint: 'f', toolType: 'browser_toolset_20260801', executionId: 'e', steps: [traces], input: vault, now: Date.now });
        const { session, space } = await open(now);
        try {
          const { events, lines } = heardEvents();
          const result = await replaySteps({ space, session, events }, { steps: entry.steps, input: vault, leaves: inputLeaves(vault), salt: 'f', maxSteps: 10, signal }, countEvents(events));
          expect(result.stopped).toBeUndefined();
          const after = await statesOf(session);
          // Every toggle as the earlier run left it.
          expect(after.on).toEqual(found.map((on) => !on));
          // Clicked exactly where the page was as the earlier run found it; passed over elsewhere.
          expect(after.clicks).toEqual(found.map((on, i) => (now[i] === on ? 1 : 0)));
          expect(lines.filter((l) => l.type === 'replay_passed_over')).toHaveLength(found.filter((on, i) => now[i] !== on).length);
        } finally {
          await session.close();
        }
      }),
      { numRuns: 8 },
    );
  });
});
