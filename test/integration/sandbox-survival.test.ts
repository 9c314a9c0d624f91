import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlaywrightSandbox } from '../../src/browser/playwright-sandbox.js';
import type { BrowserSandbox, BrowserSession, SessionOptions } from '../../src/browser/types.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { startRecordingServer, type RecordingServer } from '../support/evil-server.js';
import { commandLine, descendants } from '../support/processes.js';

/**
 * The sandbox on real Chromium: what a session's pages hold (`memoryBytes`, docs/security.md#browser-memory),
 * and a session opened right after its browser was killed, before the worker has read the end of
 * the browser's pipe: it opens on a new browser instead of failing.
 */

/** What the heavy page's script holds in an array buffer. */
const HELD_BYTES = 64 * 1024 ** 2;
/** Popups the opener page opens: pages of its site, sharing its renderer and its V8 heap. */
const POPUPS = 4;

let site: RecordingServer;
let sandbox: BrowserSandbox;
const neverAborted = new AbortController().signal;
const options = (): SessionOptions => ({ executionId: 'survival', viewport: { width: 800, height: 600 }, allowedDomains: [`127.0.0.1:${site.port}`], onBlocked: () => undefined });

beforeAll(async () => {
  site = await startRecordingServer('survival', (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    if (req.url?.startsWith('/opener')) return void res.end(`<!doctype html><title>opener</title><script>globalThis.held = new Float64Array(${HELD_BYTES / 8}).fill(1); for (let i = 0; i < ${POPUPS}; i++) window.open('/light?' + i, '_blank');</script>`);
    res.end(req.url?.startsWith('/heavy') ? `<!doctype html><title>heavy</title><script>globalThis.held = new Float64Array(${HELD_BYTES / 8}).fill(1); document.title = 'held';</script>` : '<!doctype html><title>light</title><p>light</p>');
  });
  sandbox = createPlaywrightSandbox({ logger: createSilentLogger() });
});
afterAll(async () => {
  await sandbox?.close();
  await site?.close();
});

/** The browser process: a Chromium below this process that is none of its helpers (`--type=`). */
function browserPid(): number | undefined {
  return descendants().find((p) => {
    const line = commandLine(p.pid);
    return /chrom/i.test(line.split(' ')[0] ?? '') && !line.includes('--type=');
  })?.pid;
}

describe('the Playwright sandbox', () => {
  it("counts what a session's pages hold, that page's buffer included", async () => {
    const session = await sandbox.openSession(options(), neverAborted);
    try {
      expect(session.memoryBytes).toBeDefined();
      expect((await session.navigate(`http://127.0.0.1:${site.port}/light`, neverAborted)).ok).toBe(true);
      const light = await session.memoryBytes!(neverAborted);
      expect(light).toBeGreaterThan(0);
      expect((await session.navigate(`http://127.0.0.1:${site.port}/heavy`, neverAborted)).ok).toBe(true);
      const heavy = await session.memoryBytes!(neverAborted);
      expect(heavy - light).toBeGreaterThanOrEqual(HELD_BYTES);
    } finally {
      await session.close();
    }
  });

  it('counts a heap that several pages share once: popups of one page do not multiply its buffer', async () => {
    const session = await sandbox.openSession(options(), neverAborted);
    try {
      expect((await session.navigate(`http://127.0.0.1:${site.port}/light`, neverAborted)).ok).toBe(true);
      const light = await session.memoryBytes!(neverAborted);
      expect((await session.navigate(`http://127.0.0.1:${site.port}/opener`, neverAborted)).ok).toBe(true);
      // Each round awaits the browser's answer (no timer): the popups are open once it lists them.
      let tabs = await session.tabs(neverAborted);
      for (let round = 0; tabs.length < POPUPS + 1 && round < 1000; round++) tabs = await session.tabs(neverAborted);
      expect(tabs.length).toBe(POPUPS + 1);
      const shared = await session.memoryBytes!(neverAborted);
      expect(shared - light).toBeGreaterThanOrEqual(HELD_BYTES);
      // Summed per page, the buffer would count POPUPS + 1 times.
      expect(shared - light).toBeLessThan(2 * HELD_BYTES);
    } finally {
      await session.close();
    }
  });

  it('opens a session on a new browser when the last one was killed a moment before', async () => {
    const first = await sandbox.openSession(options(), neverAborted);
    const pid = browserPid();
    expect(pid).toBeDefined();
    let second: BrowserSession | undefined;
    try {
      // Killed and asked in the same turn: the sandbox cannot have read the end of the pipe yet,
      // so the browser still looks connected when the session is asked of it.
      process.kill(pid!, 'SIGKILL');
      second = await sandbox.openSession(options(), neverAborted);
      expect(browserPid()).not.toBe(pid);
      expect(await second.navigate(`http://127.0.0.1:${site.port}/light`, neverAborted)).toMatchObject({ ok: true });
    } finally {
      await second?.close();
      await first.close();
    }
  });
});
