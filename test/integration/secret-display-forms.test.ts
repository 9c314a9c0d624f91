import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refIn } from '../../demo/workflow.js';
import { hostRules, tempDir } from '../support/env.js';
import { startScriptedModelServer, turn, memberBlock, toolUseBlock, type RecordedRequest, type ScriptedModelServer } from '../support/scripted-model-server.js';
import { startStaticServer, type StaticServer } from '../support/static-server.js';
import { runCli } from '../support/cli-process.js';

/**
 * Secrets a payment page shows in display forms (docs/secrets.md#forms, #fields), in real
 * Chromium through the worker: a card number and an IBAN set into fields that the page then
 * regroups by four (in the field itself, on a summary, in the console: spaces, dashes, dots,
 * slashes), and a PIN typed into a code widget that moves the focus on after each digit, so each
 * box holds one digit, echoed one digit per box into boxes the worker never touched. Neither the
 * model's requests, nor logs.jsonl, nor the process log may hold any of these forms.
 */

const CARD = '4111111111111111';
const IBAN = 'DE89370400440532013000';
const PIN = '7391';
const FIXTURES = path.resolve('test/fixtures/secret-display');

let site: StaticServer;
let model: ScriptedModelServer;
let dir: string;

function lastResults(request: RecordedRequest): string {
  const messages = (request.body as { messages: Array<{ role: string; content: unknown }> }).messages;
  return JSON.stringify(messages[messages.length - 1]?.content ?? '');
}

beforeAll(async () => {
  dir = await tempDir('secret-display');
  site = await startStaticServer({ root: FIXTURES });
  model = await startScriptedModelServer((request, index) => {
    const seen = lastResults(request);
    if (index === 0) {
      const opening = JSON.parse(seen) as Array<{ type: string; text?: string }> | string;
      const text = (typeof opening === 'string' ? opening : opening.map((b) => b.text ?? '').join('\n')).replace(/\\n/g, '\n').replace(/\\"/g, '"');
      return turn(
        memberBlock('form_input', { target: { type: 'ref', ref: refIn(text, 'textbox', 'Card number') }, value: '{{card}}' }),
        memberBlock('form_input', { target: { type: 'ref', ref: refIn(text, 'textbox', 'IBAN') }, value: '{{iban}}' }),
        memberBlock('left_click', { target: { type: 'ref', ref: refIn(text, 'textbox', 'PIN 1') } }),
        memberBlock('type', { text: '{{pin}}' }),
        memberBlock('read_page', {}),
        memberBlock('get_page_text', {}),
        memberBlock('find', { query: 'the PIN boxes' }),
        memberBlock('read_console', {}),
      );
    }
    return turn(toolUseBlock('finish', { status: 'completed', output: { done: true } }));
  });
});

afterAll(async () => {
  await Promise.allSettled([site?.close(), model?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

function cli(args: string[], env: Record<string, string>): ReturnType<typeof runCli> {
  return runCli(args, { BROWSER_HOST_RULES: hostRules('site.test'), WORK_DIR: path.join(dir, 'work'), LOG_LEVEL: 'debug', VIDEO_FPS: '5', ...env });
}

/** The grouped forms and the spread PIN, in any JSON escaping of the exit. */
function leaks(text: string): string[] {
  const found: string[] = [];
  for (const sep of [' ', '-', '.', '/']) {
    if (text.includes(`4111${sep}1111`) || text.includes(`1111${sep}1111`)) found.push(`card grouped by "${sep}"`);
    if (text.includes(`DE89${sep}3704`) || text.includes(`0532${sep}0130`)) found.push(`IBAN grouped by "${sep}"`);
  }
  if (text.includes(CARD.slice(0, 8)) || text.includes(IBAN.slice(0, 8))) found.push('as typed');
  // The PIN one digit per field, the fields in order (their lines between them).
  if (/value=\\*"7\\*"[^]*?value=\\*"3\\*"[^]*?value=\\*"9\\*"[^]*?value=\\*"1\\*"/.test(text)) found.push('PIN one digit per field');
  return found;
}

describe('secrets a page shows in display forms', () => {
  it('reach neither the model, nor logs.jsonl, nor the process log; the fields the worker filled read as their placeholders', async () => {
    const secret = { type: 'string', 'x-secret': true };
    const spec = {
      prompt: 'Pay with the card, the IBAN and the PIN.',
      allowedDomains: ['site.test'],
      startUrl: `http://site.test:${site.port}/`,
      payloadSchema: { type: 'object', properties: { card: secret, iban: secret, pin: secret } },
      cache: false,
    };
    const specFile = path.join(dir, 'spec.json');
    await writeFile(specFile, JSON.stringify(spec));
    const out = path.join(dir, 'out');
    const run = await cli(['run', '--spec', specFile, '--input', JSON.stringify({ card: CARD, iban: IBAN, pin: PIN }), '--out', out], { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: model.url });
    expect(run.code, run.stderr.split('\n').slice(-30).join('\n')).toBe(0);

    // The page did what it does: the model read the summary and the fields, with placeholders.
    const read = lastResults(model.requests[1]!);
    expect(read).toContain('Card {{card}}');
    expect(read).toContain('IBAN {{iban}}');
    // The fields the worker filled, regrouped or holding one digit, read as the placeholder.
    expect(read).toMatch(/textbox \\"Card number\\" \[ref_\d+\] value=\\"\{\{card\}\}\\"/);
    for (const n of [1, 2, 3, 4]) expect(read).toMatch(new RegExp(`textbox \\\\"PIN ${n}\\\\" \\[ref_\\d+\\] value=\\\\"\\{\\{pin\\}\\}\\\\"`));
    // The echo boxes, never touched by the worker, read as the placeholder too.
    expect(read).toMatch(/textbox \\"Echo 1\\" \[ref_\d+\] value=\\"\{\{pin\}\}\\"/);

    const exits: Record<string, string> = { 'process log': run.stderr };
    model.requests.forEach((r, i) => (exits[`model request ${i + 1}`] = r.rawBody));
    const [executionId] = await readdir(path.join(out, 'executions'));
    exits['logs.jsonl'] = await readFile(path.join(out, 'executions', executionId!, 'logs.jsonl'), 'utf8');
    for (const [exit, text] of Object.entries(exits)) expect(leaks(text), exit).toEqual([]);
  }, 120_000);
});
