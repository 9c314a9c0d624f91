import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refIn } from '../../demo/workflow.js';
import { hostRules, tempDir } from '../support/env.js';
import { startScriptedModelServer, turn, memberBlock, toolUseBlock, type RecordedRequest, type ScriptedModelServer } from '../support/scripted-model-server.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { startStaticServer, type StaticServer } from '../support/static-server.js';
import { runCli } from '../support/cli-process.js';

/**
 * A secret typed into a real page in Chromium, which then shows it in the forms pages give a
 * value (escaped in an attribute, JSON in the console, percent- and form-encoded in requests and
 * the next page's URL, upper- and lower-cased by CSS, whitespace collapsed, base64, cut short,
 * collapsed then cut short, escaped then cut short),
 * and beacons it to a host outside the allow-list. No exit may carry it in any form: the model's
 * requests, logs.jsonl, steps.vtt, output.json, recording.json, the process log, and the spans of
 * the run's trace as an OTLP receiver gets them (docs/secrets.md#exits).
 */

// Quotes, a backslash, a double space, non-ASCII and more than 200 characters; MARK is its
// recognisable middle (checked in any case).
const MARK = 'k9q7k9q7';
const SECRET = `Zs"w\\e  t-é${MARK.repeat(30)}`;
const FIXTURES = path.resolve('test/fixtures/secret-forms');

let site: StaticServer;
let model: ScriptedModelServer;
let receiver: OtlpReceiver;
let dir: string;

/** The text of the last tool results the model was sent. */
function lastResults(request: RecordedRequest): string {
  const messages = (request.body as { messages: Array<{ role: string; content: unknown }> }).messages;
  return JSON.stringify(messages[messages.length - 1]?.content ?? '');
}

beforeAll(async () => {
  [dir, receiver] = await Promise.all([tempDir('secret-exits'), startOtlpReceiver()]);
  site = await startStaticServer({
    root: FIXTURES,
    handle: (req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/echo') {
        res.writeHead(204).end();
        return true;
      }
      if (url.pathname === '/submit') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>Sent</title><p>Thanks, we got it.</p>');
        return true;
      }
      return false;
    },
  });
  model = await startScriptedModelServer((request, index) => {
    const seen = lastResults(request);
    switch (index) {
      case 0: {
        const opening = JSON.parse(seen) as Array<{ type: string; text?: string }> | string;
        const text = typeof opening === 'string' ? opening : opening.map((b) => b.text ?? '').join('\n');
        return turn(
          memberBlock('form_input', { target: { type: 'ref', ref: refIn(text.replace(/\\n/g, '\n'), 'textbox', 'Secret') }, value: '{{pw}}' }),
          memberBlock('read_page', {}),
          memberBlock('get_page_text', {}),
          memberBlock('find', { query: 'the echo of the secret' }),
          memberBlock('read_console', {}),
          memberBlock('read_network', {}),
        );
      }
      case 1:
        // A click on the button named by the value first: its label names the element.
        return turn(
          memberBlock('left_click', { target: { type: 'ref', ref: /button \\"\{\{pw\}\}[^[]*\[(ref_\d+)\]/.exec(seen)?.[1] ?? 'ref_0' } }),
          memberBlock('left_click', { target: { type: 'ref', ref: /button \\"Send\\" \[(ref_\d+)\]/.exec(seen)?.[1] ?? 'ref_0' } }),
          memberBlock('read_page', {}),
        );
      default:
        return turn(toolUseBlock('finish', { status: 'completed', output: { done: true } }));
    }
  });
});

afterAll(async () => {
  await Promise.allSettled([site?.close(), model?.stop(), receiver?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

function cli(args: string[], env: Record<string, string>): ReturnType<typeof runCli> {
  return runCli(args, { BROWSER_HOST_RULES: hostRules('site.test'), WORK_DIR: path.join(dir, 'work'), LOG_LEVEL: 'debug', VIDEO_FPS: '5', ...env });
}

/** Any form of the secret's recognisable part left in a text. */
function leaks(text: string): string[] {
  const found: string[] = [];
  const lower = text.toLowerCase();
  if (lower.includes(MARK)) found.push('as typed or case-changed');
  if (lower.includes(encodeURIComponent(`"w\\e`).toLowerCase())) found.push('percent-encoded start');
  if (text.includes(Buffer.from(MARK.repeat(3)).toString('base64').slice(4, 16))) found.push('base64');
  // Its start cut short, collapsed or escaped, in any JSON escaping of the exit itself.
  if (/zs(?:\\*"|&quot;|%22|\\+u0022)w\\*e/i.test(text)) found.push('its start, cut short');
  return found;
}

describe('a secret a page transforms', () => {
  it('reaches no exit in any form, and the model sees its placeholder where the page showed it', async () => {
    const spec = {
      prompt: 'Enter the secret and send the form.',
      allowedDomains: ['site.test'],
      startUrl: `http://site.test:${site.port}/`,
      payloadSchema: { type: 'object', properties: { pw: { $ref: '#/$defs/secret' } }, $defs: { secret: { type: 'string', 'x-secret': true } } },
      cache: false,
    };
    const specFile = path.join(dir, 'spec.json');
    await writeFile(specFile, JSON.stringify(spec));
    const out = path.join(dir, 'out');
    const run = await cli(['run', '--spec', specFile, '--input', JSON.stringify({ pw: SECRET }), '--out', out], { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: model.url, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint });
    expect(run.code, run.stderr.split('\n').slice(-30).join('\n')).toBe(0);

    // The page did show the value in each form: the model saw the placeholder there.
    const afterForm = lastResults(model.requests[1]!);
    expect(afterForm).toContain('{{pw}}');
    const afterSubmit = lastResults(model.requests[2]!);
    expect(afterSubmit).toMatch(/submit\?pw=\{\{pw\}\}/);
    // The page really sent it to its own host, and the beacon to the other host was refused.
    expect(site.requests.some((r) => r.path === '/echo')).toBe(true);
    const blockedLine = run.stderr.split('\n').find((line) => line.includes('request blocked') && line.includes('tracker.test'));
    expect(blockedLine).toContain('tracker.test/collect?v={{pw}}');

    const exits: Record<string, string> = { 'process log': run.stderr, 'output on stdout': run.stdout };
    model.requests.forEach((r, i) => (exits[`model request ${i + 1}`] = r.rawBody));
    const [executionId] = await readdir(path.join(out, 'executions'));
    for (const file of ['logs.jsonl', 'steps.vtt', 'output.json', 'recording.json']) exits[file] = await readFile(path.join(out, 'executions', executionId!, file), 'utf8');
    // The run's trace, exported before the command exited: names, attributes, events, statuses.
    expect(receiver.spans.filter((span) => span.name === 'execution')).toHaveLength(1);
    exits['trace'] = JSON.stringify(receiver.spans);
    expect(exits['trace']).toContain('{{pw}}');
    for (const [exit, text] of Object.entries(exits)) expect(leaks(text), exit).toEqual([]);
    expect(exits['logs.jsonl']).toContain('tracker.test/collect?v={{pw}}');
    // The label of the click on the echo carried the secret: steps.vtt shows its placeholder.
    expect(exits['steps.vtt'], exits['steps.vtt']).toMatch(/click ref_\d+.*\{\{pw\}\}/);
  }, 120_000);
});
