/**
 * The final check's request (docs/run-cache.md#the-final-check), on real Chromium and through the
 * real Messages API adapter against the scripted API (which refuses a forced tool choice where the
 * API does: with thinking on, and on Sonnet 5.5 always). The final page is a confirmation page that
 * shows none of the record's values: the request says which values it cannot show and hands the
 * verdict to the read-backs it lists, with the pieces the replay did not enter; a "no" is a hand-over
 * (`ok: false`, told why), a "yes" the output.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPlaywrightSandbox } from '../../src/browser/playwright-sandbox.js';
import type { BrowserSandbox, BrowserSession } from '../../src/browser/types.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { parseSpecification } from '../../src/domain/specification.js';
import { countEvents } from '../../src/execution/counters.js';
import { createAnthropicModel } from '../../src/model/anthropic-client.js';
import { checkFinalPage, type FinalEvidence } from '../../src/run-cache/final-check.js';
import type { Logger } from '../../src/telemetry/types.js';
import { createActionSpace } from '../../src/toolset/create.js';
import type { ActionSpace } from '../../src/toolset/types.js';
import { heardEvents } from '../support/heard-events.js';
import { startScriptedModelServer, toolUseBlock, turn, type RecordedRequest, type ScriptedModelServer } from '../support/scripted-model-server.js';
import { startStaticServer, type StaticServer } from '../support/static-server.js';

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };
const HOST = 'shop.test';
const CONFIRMATION = '<!doctype html><title>Order placed</title><nav aria-label="Shop"><a href="/">Home</a><a href="/orders">Orders</a></nav><main><h1>Thank you</h1><p>Your order A-1234 is placed.</p></main>';

let site: StaticServer;
let sandbox: BrowserSandbox;
let api: ScriptedModelServer | undefined;

beforeAll(async () => {
  site = await startStaticServer({
    root: '/nonexistent',
    handle: (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(CONFIRMATION);
      return true;
    },
  });
  sandbox = createPlaywrightSandbox({ logger: silent, hostRules: `MAP ${HOST} 127.0.0.1` });
}, 120_000);

afterAll(async () => {
  await sandbox?.close();
  await site?.close();
});

afterEach(async () => {
  // Stopping the scripted API fails the test when it refused a request by the API's rules.
  await api?.stop();
  api = undefined;
});

const payload = { reference: 'PO-4242', notes: 'First paragraph.\n\nSecond paragraph.\n\nThird paragraph.', quantity: 7 };
const evidence: FinalEvidence = {
  readBacks: [
    { atStep: 2, element: 'textbox "Reference"', value: 'PO-4242' },
    { atStep: 2, element: 'spinbutton "Quantity"', value: '7' },
    { atStep: 3, element: 'textbox "Notes"', value: 'First paragraph.\n\nSecond paragraph.' },
  ],
  pieces: [{ path: ['notes'], unit: 'paragraph', index: 2 }],
};

async function openConfirmation(): Promise<{ session: BrowserSession; space: ActionSpace }> {
  const signal = new AbortController().signal;
  const session = await sandbox.openSession({ executionId: 'final-check', viewport: { width: 1280, height: 800 }, allowedDomains: [HOST], onBlocked: () => {} }, signal);
  const space = createActionSpace(
    { kind: 'browser', computer: { type: 'computer_toolset_20260801', zoom: true }, images: { maxEdgePx: 2000, maxPixels: 3_750_000 } },
    { session, secrets: createSecretVault({}, undefined), allowJavascript: false },
  );
  const opened = await session.navigate(`http://${HOST}:${site.port}/done`, signal);
  if (!opened.ok) throw new Error(opened.error);
  await session.settle(signal);
  return { session, space };
}

/** One final check of the confirmation page by `model`, the scripted API answering `verdict`. */
async function check(model: string, verdict: Record<string, unknown>, thinking = true) {
  let seen: RecordedRequest | undefined;
  api = await startScriptedModelServer((request) => {
    seen = request;
    return turn(toolUseBlock('verify_replay', verdict));
  });
  const { session, space } = await openConfirmation();
  try {
    const { events, lines } = heardEvents();
    // Thinking as the Models API gives it, or off for every model (an operator's capabilities).
    const client = createAnthropicModel({ apiKey: 'sk-ant-test-0123456789', baseURL: api.url, maxRetries: 0, logger: silent, ...(thinking ? {} : { capabilityOverrides: { '*': { adaptiveThinking: false } } }) });
    const spec = parseSpecification({ name: 'Order', prompt: 'Place an order with the reference, the quantity and the notes of the input, and report the order id.', allowedDomains: [HOST], outputSchema: { type: 'object', required: ['orderId'] } });
    const outcome = await checkFinalPage(
      { model: client, space, session, events },
      { spec, modelId: model, vault: createSecretVault(payload, undefined), maxSteps: 10, startUrl: `http://${HOST}:${site.port}/`, signal: new AbortController().signal, validateOutput: async (v) => (v && typeof v === 'object' && 'orderId' in v ? { ok: true } : { ok: false, errors: 'orderId is required' }) },
      'Replayed steps: 1. sign in; 2. order form; 3. notes; 4. place the order.',
      countEvents(events),
      evidence,
    );
    const body = seen!.body as { tool_choice?: unknown; thinking?: unknown; system: Array<{ text: string }>; messages: Array<{ content: Array<{ type: string; text?: string }> }> };
    const asked = body.messages[0]!.content.filter((b) => b.type === 'text').map((b) => b.text).join('\n');
    return { outcome, body, asked, lines };
  } finally {
    await session.close();
  }
}

describe('the final check on a page that cannot show the record', () => {
  it('says which input values the page does not show, lists each read-back and the pieces not entered, and rests the verdict on the read-backs', async () => {
    const { outcome, asked, body } = await check('claude-opus-4-8', { matches: true, reason: 'The order is placed; the read-backs hold the input.', output: { orderId: 'A-1234' } });
    expect(outcome).toMatchObject({ ok: true, output: { orderId: 'A-1234' }, report: { ran: true, matches: true } });
    expect(asked).toContain('Each value the replay entered was read back from its field right after it was entered:');
    expect(asked).toContain('- step 2, textbox "Reference": "PO-4242"');
    expect(asked).toContain('- step 2, spinbutton "Quantity": "7"');
    expect(asked).toContain('- step 3, textbox "Notes": "First paragraph.\\n\\nSecond paragraph."');
    expect(asked).toContain('The replay did not enter paragraph 3 of {{notes}}');
    // The confirmation shows none of the three: said so, and the verdict told to rest on the read-backs.
    expect(asked).toMatch(/The final page does not show \{\{reference\}\}, \{\{notes\}\}, \{\{quantity\}\} anywhere \(a confirmation page[^)]*\): for those, let your verdict rest on the read-backs above\./);
    expect(asked).toContain('Your order A-1234 is placed.');
    expect(body.system.map((b) => b.text).join('\n')).toContain('where the final page cannot show a value (a confirmation page), judge it by those');
  });

  it('hands the run to the model on a "no", with the reason', async () => {
    const { outcome, lines } = await check('claude-opus-4-8', { matches: false, reason: 'The read-back of the notes lacks the third paragraph.' });
    expect(outcome).toEqual({ ok: false, why: 'the final check found that the page does not show the task done with this input: The read-back of the notes lacks the third paragraph', report: { ran: true, matches: false, reason: 'The read-back of the notes lacks the third paragraph.' } });
    expect(lines.filter((l) => l.type === 'final_check').map((l) => l.fields.matches)).toEqual([false]);
  });

  it.each([
    ['claude-sonnet-5-5', true, false],
    ['claude-sonnet-5-5', false, false],
    ['claude-opus-5-5', true, false],
    ['claude-opus-5-5', false, true],
    ['claude-opus-4-8', false, true],
  ])('on %s (thinking %s) forces verify_replay only where the API takes it (%s), and reads the answer for the call either way', async (model, thinking, forcedHere) => {
    const { outcome, body } = await check(model, { matches: true, reason: 'Placed.', output: { orderId: 'A-1234' } }, thinking);
    // The scripted API refused nothing (stopping it would fail the test), and the verdict was read.
    expect(outcome).toMatchObject({ ok: true, output: { orderId: 'A-1234' } });
    expect(body.thinking !== undefined).toBe(thinking);
    expect(body.tool_choice).toEqual(forcedHere ? { type: 'tool', name: 'verify_replay' } : undefined);
  });
});
