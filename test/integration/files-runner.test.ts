import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserSandbox } from '../../src/browser/types.js';
import { createBrowser, createRunnerDeps, inputFileOpener } from '../../src/compose.js';
import { loadConfig, type Config } from '../../src/config/schema.js';
import { runExecution } from '../../src/runner/run-execution.js';
import type { ExecutionSummary } from '../../src/runner/types.js';
import { createLocalStore } from '../../src/storage/local-store.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { tempDir } from '../support/env.js';
import { CSV, NOTES, startFilesSite, TOTP_SEED, TOTP_USER, type FilesSite } from '../support/files-site.js';
import { s3Credentials, startS3, type TestS3 } from '../support/s3.js';
import { browser as member, calls, finish, startScriptedModelServer, turn, memberBlock, type RecordedRequest, type Script } from '../support/scripted-model-server.js';
import { lastObservation, refIn, turnOf } from '../../demo/workflow.js';

/**
 * Files and one-time codes through the whole runner (docs/files-and-codes.md), on real Chromium, s3rver
 * and the fixture site, with the real SDK against a scripted model: input files fetched before
 * the run (and refused with invalid_input before anything runs), a download kept as an artifact
 * and listed in output.json, a TOTP sign-in typed through its placeholder.
 */

const INVOICE = Buffer.from('%PDF-1.7\n%\u00e2\u00e3 invoice 42\n', 'latin1');
const INPUT_LIMIT = 64 * 1024;
const logger = createSilentLogger();
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

let site: FilesSite;
let s3: TestS3;
let dir: string;
let config: Config;
let browser: BrowserSandbox;

beforeAll(async () => {
  [site, s3, dir] = await Promise.all([startFilesSite(), startS3('inputs'), tempDir('files-runner')]);
  const client = new S3Client({ region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, credentials: s3Credentials });
  try {
    await client.send(new PutObjectCommand({ Bucket: 'inputs', Key: 'docs/invoice.pdf', Body: INVOICE, ContentType: 'application/pdf' }));
    await client.send(new PutObjectCommand({ Bucket: 'inputs', Key: 'docs/big.bin', Body: Buffer.alloc(INPUT_LIMIT + 1, 1) }));
  } finally {
    client.destroy();
  }
  config = loadConfig({
    BROWSER_HOST_RULES: site.hostRules,
    WORK_DIR: path.join(dir, 'work'),
    ANTHROPIC_API_KEY: 'k',
    ANTHROPIC_MAX_RETRIES: '0',
    VIDEO_ENABLED: 'false',
    S3_ENDPOINT: s3.endpoint,
    S3_FORCE_PATH_STYLE: 'true',
    INPUT_FILE_BUCKETS: 'inputs',
    INPUT_FILE_MAX_BYTES: String(INPUT_LIMIT),
  });
  browser = createBrowser(config, logger);
});

afterAll(async () => {
  await browser?.close();
  await Promise.all([site?.close(), s3?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Run {
  summary: ExecutionSummary & { status: 'completed' | 'failed' };
  requests: RecordedRequest[];
  /** logs.jsonl, parsed, and everything written as text (logs, output, recording). */
  events: Array<Record<string, unknown>>;
  written: string;
}

async function run(script: Script, spec: Record<string, unknown>, inputPayload: unknown): Promise<Run> {
  const model = await startScriptedModelServer(script);
  try {
    const runConfig = { ...config, ANTHROPIC_BASE_URL: model.url };
    const store = createLocalStore({ dir: path.join(dir, 'artifacts'), prefix: '' });
    const deps = createRunnerDeps({ config: runConfig, logger, browser, store, openInputFile: inputFileOpener(runConfig, logger, s3Credentials) });
    const specification = { prompt: 'Handle the files', allowedDomains: ['files.test'], startUrl: 'http://files.test/', ...spec };
    const summary = await runExecution(deps, { executionId: randomUUID(), inputPayload, specification }, new AbortController().signal);
    if (summary.status === 'skipped') throw new Error('unexpected skip');
    const read = async (url: string | null) => (url ? readFile(fileURLToPath(url), 'utf8') : '');
    const logs = await read(summary.urls.logsUrl);
    const folder = path.dirname(fileURLToPath(summary.urls.logsUrl!));
    const recording = existsSync(path.join(folder, 'recording.json')) ? readFileSync(path.join(folder, 'recording.json'), 'utf8') : '';
    return {
      summary,
      requests: model.requests,
      events: logs.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>),
      written: [logs, await read(summary.urls.outputUrl), recording].join('\n'),
    };
  } finally {
    await model.stop();
  }
}

const click = (x: number, y: number) => member('left_click', { target: { type: 'coordinate', x, y } });

describe('downloads of a run', () => {
  it('keeps a download as an artifact, lists it in output.json and logs its steps', async () => {
    const r = await run([click(120, 35), finish('completed', { downloaded: true })], {}, null);
    expect(r.summary.document.status).toBe('completed');
    const [download] = r.summary.document.downloads;
    expect(r.summary.document.downloads).toHaveLength(1);
    expect(download).toMatchObject({ name: 'orders.csv', url: 'http://files.test/files/orders.csv', bytes: Buffer.byteLength(CSV), sha256: sha256(CSV), contentType: 'text/csv; charset=utf-8' });
    expect(download!.artifactUrl).toMatch(/\/executions\/[^/]+\/downloads\/orders\.csv$/);
    expect(await readFile(fileURLToPath(download!.artifactUrl!), 'utf8')).toBe(CSV);
    const steps = r.events.filter((e) => e.type === 'download');
    expect(steps.map((e) => e.state)).toEqual(['started', 'completed']);
    expect(steps[1]).toMatchObject({ id: 'download-1', name: 'orders.csv', bytes: Buffer.byteLength(CSV), sha256: sha256(CSV) });
    // The worker's local paths stay out of the logs.
    expect(r.written).not.toContain(config.WORK_DIR);
  });
});

describe('one-time codes in a run', () => {
  it('types the current code through {{mfa}}; the site accepts it and no code or seed is written anywhere', async () => {
    const schema = { type: 'object', required: ['user', 'mfa'], properties: { user: { type: 'string' }, mfa: { type: 'string', format: 'totp', 'x-secret': true } } };
    const seed = `otpauth://totp/Files:alice?secret=${TOTP_SEED}&issuer=Files`;
    const attempt = site.next('login');
    const r = await run(
      [click(120, 35), member('type', { text: TOTP_USER }), click(120, 75), member('type', { text: '{{mfa}}' }), member('key', { text: 'Return' }), finish('completed', { signedIn: true })],
      { startUrl: 'http://files.test/login.html', payloadSchema: schema },
      { user: TOTP_USER, mfa: seed },
    );
    expect(r.summary.document.status).toBe('completed');
    const login = await attempt;
    expect(login).toMatchObject({ user: TOTP_USER, accepted: true });
    const sent = r.requests.map((q) => q.rawBody).join('\n');
    for (const text of [r.written, sent]) {
      expect(text).not.toContain(login.code);
      expect(text).not.toContain(TOTP_SEED);
    }
    expect(r.events.find((e) => e.type === 'action' && (e.input as { text?: string }).text === '{{mfa}}')).toBeDefined();
    expect(sent).toContain('{{mfa}}');
  });
});

describe('input files of a run', () => {
  it('fetches s3:// and allowed http:// files before the run and shows the model their names only', async () => {
    const seen: Record<string, string> = {};
    const r = await run(
      (_request, index) => {
        // While the run goes on, its input files are in its scratch folder.
        for (const folder of readdirSync(config.WORK_DIR)) {
          for (const name of ['invoice.pdf', 'notes.txt']) {
            const file = path.join(config.WORK_DIR, folder, 'inputs', name);
            if (existsSync(file)) seen[name] = sha256(readFileSync(file));
          }
        }
        return index === 0 ? finish('completed', { ok: true }) : finish('completed');
      },
      { payloadSchema: { type: 'object', properties: { notes: { type: 'string', format: 'uri', 'x-file': true } } } },
      { customer: 'ACME', invoice: { $file: 's3://inputs/docs/invoice.pdf' }, notes: 'http://files.test/files/notes.txt?token=abc' },
    );
    expect(r.summary.document.status).toBe('completed');
    expect(seen).toEqual({ 'invoice.pdf': sha256(INVOICE), 'notes.txt': sha256(NOTES) });
    const staged = r.events.filter((e) => e.type === 'input_file');
    expect(staged).toEqual([
      expect.objectContaining({ name: 'invoice.pdf', payloadPath: 'invoice', source: 's3://inputs/docs/invoice.pdf', bytes: INVOICE.length, sha256: sha256(INVOICE), contentType: 'application/pdf' }),
      expect.objectContaining({ name: 'notes.txt', payloadPath: 'notes', source: 'http://files.test/files/notes.txt', bytes: Buffer.byteLength(NOTES), sha256: sha256(NOTES), contentType: 'text/plain' }),
    ]);
    const system = (r.requests[0]!.body as { system: Array<{ text: string }> }).system.map((b) => b.text).join('\n');
    // The input as named values (docs/run-cache.md#inputs-by-reference): files by their names only.
    const shown = /<input>\n[\s\S]*?\n\n([\s\S]*)\n<\/input>/.exec(system)?.[1]?.split('\n');
    expect(shown).toEqual(['{{customer}} = "ACME"', 'invoice: the input file "invoice.pdf" (upload it by its name)', 'notes: the input file "notes.txt" (upload it by its name)']);
    expect(system).not.toMatch(/s3:\/\/|\/files\/notes\.txt|token=abc/);
    expect(r.written).not.toContain('token=abc');
  });

  const bad = (name: string, payload: unknown, message: RegExp, spec: Record<string, unknown> = {}) => ({ name, payload, message, spec });
  it.each([
    bad('a missing S3 object', { invoice: { $file: 's3://inputs/docs/missing.pdf' } }, /^input file at invoice \(s3:\/\/inputs\/docs\/missing\.pdf\): no such object in S3$/),
    bad('an S3 object over the limit', { invoice: { $file: 's3://inputs/docs/big.bin' } }, /larger than the input file limit of 65536 bytes \(INPUT_FILE_MAX_BYTES\): 65537 bytes$/),
    bad('an http file over the limit, announced by nothing', { f: { $file: 'http://files.test/files/big.bin' } }, /^input file at f \(http:\/\/files\.test\/files\/big\.bin\): is larger than the input file limit of 65536 bytes \(INPUT_FILE_MAX_BYTES\)$/),
    bad('an unsafe name', { f: { $file: 's3://inputs/docs/invoice.pdf', name: '../../etc/cron.d/x' } }, /^input file at f: unsafe file name: the name contains a path separator/),
    bad('a bucket the worker does not read', { f: { $file: 's3://other-bucket/a.pdf' } }, /the bucket "other-bucket" is not one input files are read from \(INPUT_FILE_BUCKETS\)/),
    bad('a host outside the allow-list', { f: { $file: 'http://evil.test/files/stolen.pdf' } }, /not fetched: host "evil\.test" is not in the allow-list/),
    bad('a redirect out of the allow-list', { f: { $file: 'http://files.test/go/evil' } }, /refused: redirected to http:\/\/evil\.test\/files\/stolen\.pdf: host "evil\.test" is not in the allow-list/),
    bad('a missing http file', { f: { $file: 'http://files.test/files/nope.pdf' } }, /: the server answered HTTP 404$/),
    bad('an allowed name on a private address', { f: { $file: 'http://localhost:1/a.pdf' } }, /refused: host "localhost" resolves to a non-public address/, { allowedDomains: ['files.test', 'localhost'] }),
    bad(
      'a bad TOTP seed',
      { mfa: 'JBSWY3DP' },
      /^the input payload does not match the payload schema: \/mfa is not a usable TOTP seed: too short/,
      { payloadSchema: { type: 'object', properties: { mfa: { type: 'string', format: 'totp', 'x-secret': true } } } },
    ),
  ])('refuses $name with invalid_input before anything runs', async ({ payload, message, spec }) => {
    const r = await run([finish('completed')], spec, payload);
    expect(r.summary.document).toMatchObject({ status: 'failed', error: { code: 'invalid_input', message: expect.stringMatching(message) }, counters: { nSteps: 0, nAgentActions: 0, durationMs: 0 }, downloads: [] });
    expect(r.requests).toHaveLength(0);
    expect(r.events.some((e) => e.type === 'execution_started')).toBe(false);
    expect(site.evil.hits).toEqual([]);
  });
});

describe('files through the action spaces', () => {
  const invoice = { invoice: { $file: 's3://inputs/docs/invoice.pdf' } };
  const upload = { startUrl: 'http://files.test/upload.html' };
  /** The reference of the first `(file input)` element read_page listed. */
  const fileInputRef = (text: string) => {
    const found = /\[(ref_\d+)\] \(file input/.exec(text);
    if (!found) throw new Error(`no file input in:\n${text}`);
    return found[1]!;
  };

  it('browser toolset: file_upload gives an input file to a file input by reference, and to the chooser a button opened; the site receives its bytes', async () => {
    const received = site.next('upload');
    const r = await run(
      (request) => {
        const seen = lastObservation(request.body);
        switch (turnOf(request.body)) {
          case 0:
            return turn(
              memberBlock('file_upload', { target: { type: 'ref', ref: fileInputRef(seen) }, paths: ['invoice.pdf'] }),
              memberBlock('left_click', { target: { type: 'ref', ref: refIn(seen, 'button', 'Choose a document…') } }),
            );
          case 1: {
            // The click opened a chooser (no dialog): the result said so; the same button answers it.
            if (!seen.includes('opened a file chooser')) return finish('failed', undefined, `no chooser: ${seen}`);
            return calls([{ name: 'read_page', input: { filter: 'interactive' }, toolset_name: 'browser' }]);
          }
          case 2:
            return turn(
              memberBlock('file_upload', { target: { type: 'ref', ref: refIn(seen, 'button', 'Choose a document…') }, paths: ['invoice.pdf'] }),
              memberBlock('file_upload', { target: { type: 'ref', ref: refIn(seen, 'button', 'Send') }, paths: ['/etc/passwd'] }),
            );
          case 3:
            return member('left_click', { target: { type: 'ref', ref: refIn(lastObservationOf(request, 2), 'button', 'Send') } });
          default:
            return finish('completed', { sent: true });
        }
      },
      upload,
      invoice,
    );
    expect(r.summary.document.status).toBe('completed');
    const files = await received;
    expect(files.map((f) => [f.field, f.filename, f.sha256])).toEqual([
      ['doc', 'invoice.pdf', sha256(INVOICE)],
      ['attachment', 'invoice.pdf', sha256(INVOICE)],
    ]);
    // A path that is not an input file is refused, with the files that may be chosen.
    const refusals = r.events.filter((e) => e.type === 'action' && e.action === 'file_upload' && e.ok === false);
    expect(refusals).toHaveLength(1);
    expect(String(refusals[0]!.error)).toContain('"/etc/passwd" is not an input file of this execution; the files you may upload are: invoice.pdf');
    // The model was told which files exist, and never a local path.
    const system = (r.requests[0]!.body as { system: Array<{ text: string }> }).system[0]!.text;
    expect(system).toContain('- invoice.pdf (application/pdf');
    expect(r.requests.map((q) => q.rawBody).join('\n')).not.toContain(config.WORK_DIR);
    const decl = (r.requests[0]!.body as { tools: Array<{ type?: string; configs?: Record<string, { enabled?: boolean }> }> }).tools[0]!;
    expect(decl.configs?.file_upload).toEqual({ enabled: true });
  });

  it('computer toolset: upload_file answers the chooser the page opened', async () => {
    const received = site.next('upload');
    const r = await run(
      [
        turn(memberBlock('left_click', { coordinate: [120, 35] }, 'computer')),
        { content: [{ type: 'tool_use', id: 'toolu_upload_1', name: 'upload_file', input: { names: ['invoice.pdf'] } }] },
        turn(memberBlock('left_click', { coordinate: [120, 115] }, 'computer')),
        finish('completed', { sent: true }),
      ],
      { ...upload, model: 'claude-sonnet-5-5', toolset: 'computer' },
      invoice,
    );
    expect(r.summary.document.status).toBe('completed');
    // The form also posts its other file input, left empty.
    expect((await received).filter((f) => f.filename !== '').map((f) => [f.field, f.sha256])).toEqual([['doc', sha256(INVOICE)]]);
    expect(JSON.stringify(r.requests[1]!.body)).toContain('The page opened a file chooser: answer it with upload_file');
    expect(r.summary.document.counters.nAgentActions).toBe(3);
  });

  it('browser toolset: a finished download is reported in browser_state, without its local path', async () => {
    const r = await run(
      (request) => {
        const seen = JSON.stringify(request.body);
        if (turnOf(request.body) === 0) return member('left_click', { target: { type: 'coordinate', x: 120, y: 35 } });
        // Read the page until the download is reported (it finishes after the click's answer).
        if (!seen.includes('download_completed') && turnOf(request.body) < 8) return member('get_page_text');
        return finish('completed', { downloaded: seen.includes('download_completed') });
      },
      {},
      null,
    );
    expect(r.summary.document).toMatchObject({ status: 'completed', output: { downloaded: true } });
    const states = r.requests.flatMap((q) => JSON.stringify(q.body).match(/"type":"download_completed"[^}]*}/g) ?? []);
    expect(states[0]).toMatch(/"download_id":"download-1","url":"http:\/\/files\.test\/files\/orders\.csv","size_bytes":\d+/);
    expect(states.join('')).not.toContain('path');
  });
});

/** The text the worker showed before the n-th turn (0-based) of the request's execution. */
function lastObservationOf(request: RecordedRequest, n: number): string {
  const body = request.body as { messages: Array<{ role: string }> };
  const upTo = body.messages.filter((m, i) => m.role === 'user' && body.messages.slice(0, i).filter((x) => x.role === 'assistant').length === n);
  return lastObservation({ messages: upTo });
}
