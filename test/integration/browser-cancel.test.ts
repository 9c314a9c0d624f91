import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { browserCall } from '../../src/agent/browser-call.js';
import { runAgent } from '../../src/agent/loop.js';
import { createPlaywrightSandbox } from '../../src/browser/playwright-sandbox.js';
import type { BrowserSandbox, BrowserSession } from '../../src/browser/types.js';
import { ExecutionError } from '../../src/contract/errors.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { createAnthropicModel } from '../../src/model/anthropic-client.js';
import { chooseActionSpace } from '../../src/model/tool-versions.js';
import type { Logger } from '../../src/telemetry/types.js';
import { createActionSpace } from '../../src/toolset/create.js';
import type { ActionSpace } from '../../src/toolset/types.js';
import { neverAborted } from '../support/env.js';
import { heardEvents } from '../support/heard-events.js';
import { finish, memberBlock, startScriptedModelServer, turn } from '../support/scripted-model-server.js';
import { startStaticServer, type StaticServer } from '../support/static-server.js';
import { countEvents } from '../../src/execution/counters.js';

/**
 * A run stopped in the middle of an action stops within a second, and the browser call in
 * flight is cancelled, not abandoned (docs/action-spaces.md#cancellation): a script running in
 * the page is terminated (the page answers again at once), a load is stopped (the site sees its
 * connection closed).
 */

const ROOT = fileURLToPath(new URL('../fixtures/sites/toolset/', import.meta.url));
/** What the issue asks: from the abort to the end of the call. */
const STOP_WITHIN_MS = 1_000;
/**
 * Generous bound for "the page answers again": well below the 10 s after which Chromium would end
 * a javascript_exec script on its own, and a page's own loop never ends without the cancel.
 */
const ANSWER_WITHIN_MS = 5_000;
/** The proxy's idle timeout is 15 s: a connection closed before that was closed by the cancel. */
const CLOSED_WITHIN_MS = 8_000;

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

let server: StaticServer;
let sandbox: BrowserSandbox;
let origin: string;
/**
 * Page code that tells the server it is about to loop: a synchronous request, answered before the
 * same task goes on into the loop (a beacon may wait for a task that never comes).
 */
const SAY = (path: string) => `const x = new XMLHttpRequest(); x.open('GET', '${path}', false); x.send();`;
/** What the page tells the server just before it starts busy-looping: the test waits for it. */
const beacons = new Set<(path: string) => void>();
/** Requests that are never answered, with their sockets. */
const hanging = new Set<{ path: string; socket: Socket; res: ServerResponse }>();
const hangingWaiters = new Set<() => void>();

beforeAll(async () => {
  server = await startStaticServer({
    root: ROOT,
    handle: (req, res) => {
      if (req.url?.startsWith('/beacon')) {
        res.writeHead(204).end();
        for (const notify of [...beacons]) notify(req.url);
        return true;
      }
      if (req.url === '/busy') {
        // The page's own script loops forever once asked (window.startLoop), after a beacon.
        res.writeHead(200, { 'content-type': 'text/html' }).end(
          '<!doctype html><title>Busy</title><h1>Busy page</h1><button style="position:fixed;left:0;top:0;width:300px;height:200px" onclick="window.clicked = true">Go</button>' +
            `<script>window.startLoop = () => setTimeout(() => { ${SAY('/beacon/page-loop')} for (;;) {} }, 0);</script>`,
        );
        return true;
      }
      if (req.url === '/never') {
        hanging.add({ path: req.url, socket: req.socket, res });
        for (const notify of [...hangingWaiters]) notify();
        return true;
      }
      return false;
    },
  });
  origin = `http://cancel.test:${server.port}`;
  sandbox = createPlaywrightSandbox({ logger: silent, hostRules: 'MAP cancel.test 127.0.0.1' });
});

afterAll(async () => {
  for (const { res } of hanging) res.destroy();
  await sandbox?.close();
  await server?.close();
});

/** Resolves when the page's beacon `path` reaches the server (the loop starts right after it). */
function beacon(path: string): Promise<void> {
  return new Promise((resolve) => {
    const notify = (got: string) => {
      if (got !== path) return;
      beacons.delete(notify);
      resolve();
    };
    beacons.add(notify);
  });
}

function requestArrived(): Promise<{ socket: Socket }> {
  return new Promise((resolve) => {
    const check = () => {
      const [first] = hanging;
      if (!first) return;
      hangingWaiters.delete(check);
      resolve(first);
    };
    hangingWaiters.add(check);
    check();
  });
}

/** Aborts `controller` and measures how long `call` takes to settle after it; returns its error. */
async function abortAndMeasure(controller: AbortController, call: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const outcome = call.then(
    () => ({ error: undefined, at: performance.now() }),
    (error: unknown) => ({ error, at: performance.now() }),
  );
  const abortedAt = performance.now();
  controller.abort(new ExecutionError('timeout', 'the run reached its deadline'));
  const { error, at } = await outcome;
  return { error, ms: at - abortedAt };
}

/** How long the page takes to answer a trivial script (it cannot while its thread is busy). */
async function answerTime(session: BrowserSession): Promise<number> {
  const start = performance.now();
  const out = await session.tab()!.evaluate('1 + 1', ANSWER_WITHIN_MS, neverAborted);
  expect(out).toEqual({ ok: true, value: '2' });
  return performance.now() - start;
}

describe('browser calls are cancelled when the run stops', () => {
  let session: BrowserSession;
  let space: ActionSpace;

  beforeEach(async () => {
    session = await sandbox.openSession({ executionId: 'cancel', viewport: { width: 800, height: 600 }, allowedDomains: [`cancel.test:${server.port}`], onBlocked: () => undefined }, neverAborted);
    const vault = createSecretVault({}, { type: 'object', properties: {} });
    space = createActionSpace(
      { kind: 'browser', computer: { type: 'computer_toolset_20260801', zoom: true }, images: { maxEdgePx: 2000, maxPixels: 3_750_000 } },
      { session, secrets: vault, allowJavascript: true },
    );
    expect((await session.navigate(`${origin}/busy`, neverAborted)).ok).toBe(true);
  });

  afterEach(async () => {
    await session?.close();
  });

  it('terminates a javascript_exec script that busy-loops: the action stops within 1 s and the page answers again', async () => {
    const controller = new AbortController();
    const looping = beacon('/beacon/exec-loop');
    const call = browserCall(
      (signal) =>
        space.run({ type: 'tool_use', id: 'toolu_1', name: 'javascript_exec', toolset_name: 'browser', input: { text: `${SAY('/beacon/exec-loop')} for (;;) {}` } }, { signal }),
      controller.signal,
    );
    // The action is in the page now: its script sent the beacon and loops.
    await looping;
    const { error, ms } = await abortAndMeasure(controller, call);
    expect(error).toMatchObject({ code: 'timeout' });
    expect(ms).toBeLessThan(STOP_WITHIN_MS);
    expect(await answerTime(session)).toBeLessThan(ANSWER_WITHIN_MS);
  });

  it('terminates the page’s own busy loop that holds up a page read: the read stops within 1 s and the page answers again', async () => {
    const looping = beacon('/beacon/page-loop');
    expect(await session.tab()!.evaluate('window.startLoop(); "started"', 5_000, neverAborted)).toEqual({ ok: true, value: 'started' });
    await looping;
    // The page's thread runs its loop forever: a read of the page waits behind it. The read is
    // made through the port itself, so that it is surely in flight when the run stops.
    const controller = new AbortController();
    const call = browserCall((signal) => session.tab()!.readPage({ filter: 'all', maxChars: 2_000 }, signal), controller.signal);
    const { error, ms } = await abortAndMeasure(controller, call);
    expect(error).toMatchObject({ code: 'timeout' });
    expect(ms).toBeLessThan(STOP_WITHIN_MS);
    // Only the cancel ends the page's loop: without it the page would never answer.
    expect(await answerTime(session)).toBeLessThan(ANSWER_WITHIN_MS);
    const read = await session.tab()!.readPage({ filter: 'all', maxChars: 2_000 }, neverAborted);
    expect(read.ok && read.value.lines.join('\n')).toContain('Busy page');
  });

  it('stops a click on a page whose thread is busy, and releases the button', async () => {
    const looping = beacon('/beacon/page-loop');
    await session.tab()!.evaluate('window.startLoop(); "started"', 5_000, neverAborted);
    await looping;
    const controller = new AbortController();
    const call = browserCall((signal) => session.click(40, 40, { button: 'left', clickCount: 1 }, signal), controller.signal);
    const { error, ms } = await abortAndMeasure(controller, call);
    expect(error).toMatchObject({ code: 'timeout' });
    expect(ms).toBeLessThan(STOP_WITHIN_MS);
    expect(await answerTime(session)).toBeLessThan(ANSWER_WITHIN_MS);
    // No button stays down: a move after the cancel is a plain move, not a drag.
    await session.tab()!.evaluate('window.moves = []; addEventListener("mousemove", (e) => moves.push(e.buttons)); "listening"', ANSWER_WITHIN_MS, neverAborted);
    await session.mouseMove(60, 60, neverAborted);
    // (The cancelled click's own move may land here too, once the page is free: also without a button.)
    const moves = await session.tab()!.evaluate('JSON.stringify(moves)', ANSWER_WITHIN_MS, neverAborted);
    const buttons = moves.ok ? (JSON.parse(moves.value) as number[]) : [];
    expect(buttons.length).toBeGreaterThan(0);
    expect(buttons.every((b) => b === 0)).toBe(true);
    // The click itself did not go on after the cancel.
    expect(await session.tab()!.evaluate('String(window.clicked === true)', ANSWER_WITHIN_MS, neverAborted)).toEqual({ ok: true, value: 'false' });
  });

  it('stops a navigation to a site that never answers: the call ends within 1 s and the site sees the connection closed', async () => {
    const controller = new AbortController();
    const call = browserCall((signal) => session.navigate(`${origin}/never`, signal), controller.signal);
    const { socket } = await requestArrived();
    const closed = socket.destroyed ? Promise.resolve() : once(socket, 'close');
    const abortedAt = performance.now();
    const { error, ms } = await abortAndMeasure(controller, call);
    expect(error).toMatchObject({ code: 'timeout' });
    expect(ms).toBeLessThan(STOP_WITHIN_MS);
    await closed;
    expect(performance.now() - abortedAt).toBeLessThan(CLOSED_WITHIN_MS);
    // The tab is usable at once: it stopped loading.
    expect((await session.navigate(`${origin}/busy`, neverAborted)).ok).toBe(true);
  });

  it('ends settling at once, and the wait it runs in the page with it', async () => {
    const tab = session.tab()!;
    // A page that never stops changing: settling would wait for it up to its 2 s cap. An animation
    // frame loop, not a timer: a timer that changes the page on every tick is a clock, which
    // settling does not wait for (docs/action-spaces.md#settling).
    await tab.evaluate('(function frame() { document.body.dataset.tick = String(performance.now()); requestAnimationFrame(frame); })(); "ticking"', ANSWER_WITHIN_MS, neverAborted);
    await session.mouseMove(5, 5, neverAborted);
    const waitsInPage = async () => {
      const out = await tab.evaluate("String((window[Symbol.for('execution-worker-settle-waits')] || new Set()).size)", ANSWER_WITHIN_MS, neverAborted);
      return out.ok ? Number(out.value) : NaN;
    };
    const controller = new AbortController();
    let ended = false;
    const settling = session.settle(controller.signal).finally(() => (ended = true));
    // Asked until the page runs the wait (each ask is an answer from the page, not a sleep).
    while ((await waitsInPage()) !== 1) expect(ended, 'settling ended before its wait ran in the page').toBe(false);
    const abortedAt = performance.now();
    const { error, ms } = await abortAndMeasure(controller, settling);
    expect(error).toBeUndefined();
    expect(ms).toBeLessThan(STOP_WITHIN_MS);
    while ((await waitsInPage()) !== 0);
    // Well before the cap would have ended it.
    expect(performance.now() - abortedAt).toBeLessThan(STOP_WITHIN_MS);
  });

  it('stops a whole run of the loop mid-action within 1 s, with the script in the page terminated', async () => {
    const MODEL = 'claude-sonnet-5-5';
    const chosen = chooseActionSpace(MODEL, 'browser');
    if (!chosen.ok) throw new Error(chosen.reason);
    const model = await startScriptedModelServer((_request, index) =>
      index === 0 ? turn(memberBlock('javascript_exec', { text: `${SAY('/beacon/run-loop')} for (;;) {}` })) : finish('completed', {}),
    );
    try {
      const vault = createSecretVault({}, undefined);
      const runSpace = createActionSpace({ kind: chosen.kind, computer: chosen.tools.computer, images: chosen.tools.images }, { session, secrets: vault, allowJavascript: true });
      const controller = new AbortController();
      const looping = beacon('/beacon/run-loop');
      const { events } = heardEvents();
      const run = runAgent(
        { model: createAnthropicModel({ apiKey: 'sk-ant-cancel', baseURL: model.url, maxRetries: 0, logger: silent }), space: runSpace, session, events },
        { spec: { prompt: 'Run the script.', allowedDomains: [`cancel.test:${server.port}`], allowJavascript: true }, modelId: MODEL, vault, maxSteps: 5, startUrl: `${origin}/busy`, signal: controller.signal },
        countEvents(events),
      );
      await looping;
      const { error, ms } = await abortAndMeasure(controller, run);
      expect(error).toMatchObject({ code: 'timeout' });
      expect(ms).toBeLessThan(STOP_WITHIN_MS);
      expect(await answerTime(session)).toBeLessThan(ANSWER_WITHIN_MS);
      // The model was asked once: the run did not go on to another turn.
      expect(model.requests.filter((r) => r.url.startsWith('/v1/messages'))).toHaveLength(1);
    } finally {
      await model.stop();
    }
  });
});
