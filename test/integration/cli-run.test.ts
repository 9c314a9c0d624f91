import { spawn } from 'node:child_process';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_INPUT, DEMO_WORKFLOW, demoToolsetTurn, lastObservation, turnOf } from '../../demo/workflow.js';
import { outputDocument } from '../../src/contract/output.js';
import { recordingFile } from '../../src/contract/recording.js';
import { hostRules, tempDir } from '../support/env.js';
import { calls, startScriptedModelServer, type ScriptedModelServer } from '../support/scripted-model-server.js';
import { startShopServer, type ShopServer } from '../support/shop-server.js';

/**
 * `execution-worker run` as a user runs it (a child process): a run with a model, then the
 * same run replayed from its recording.json with no model, to the same counters and output.
 */

let shop: ShopServer;
let model: ScriptedModelServer;
let dir: string;
let specFile: string;

beforeAll(async () => {
  [shop, model, dir] = await Promise.all([startShopServer(), startScriptedModelServer((request) => calls(demoToolsetTurn(turnOf(request.body), lastObservation(request.body)))), tempDir('cli-run')]);
  specFile = path.join(dir, 'spec.json');
  await writeFile(specFile, JSON.stringify(DEMO_WORKFLOW(`${shop.origin}/`)));
});

afterAll(async () => {
  const stopped = await Promise.allSettled([shop?.close(), model?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
  // The model server refuses requests that break the API's rules (its stop() says which).
  if (stopped[1].status === 'rejected') throw stopped[1].reason;
});

/** Runs the CLI; a run still going after `limitMs` is stopped (SIGTERM, then SIGKILL) so no process outlives the test. */
function cli(args: string[], env: Record<string, string> = {}, limitMs = 70_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/cli-entry.ts', ...args], {
      env: { ...process.env, BROWSER_HOST_RULES: hostRules('shop.test'), WORK_DIR: path.join(dir, 'work'), LOG_LEVEL: 'info', ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: '', VIDEO_FPS: '5', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const term = setTimeout(() => child.kill('SIGTERM'), limitMs);
    const kill = setTimeout(() => child.kill('SIGKILL'), limitMs + 10_000);
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(term);
      clearTimeout(kill);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The end of a run's log, to explain a failed expectation. */
const tail = (text: string) => text.split('\n').slice(-40).join('\n');

describe('execution-worker run', () => {
  it('runs one execution with a model, then replays its recording to the same counters and output', async () => {
    const out1 = path.join(dir, 'out1');
    const first = await cli(['run', '--spec', specFile, '--input', JSON.stringify(DEMO_INPUT), '--out', out1], { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: model.url });
    expect(first.stderr).not.toContain('demo-Pa55word');
    expect(first.code, tail(first.stderr)).toBe(0);
    const doc1 = JSON.parse(first.stdout);
    expect(doc1).toMatchObject({ status: 'completed', output: { orderId: 'A-1001' }, counters: { nSteps: 3, nAgentActions: 6, nScreenshots: 1 } });
    // Of its declared shape, and nothing beside it (a field the schema does not know would be dropped by the parse).
    expect(outputDocument.parse(doc1)).toEqual(doc1);

    const [executionId] = await readdir(path.join(out1, 'executions'));
    const files = (await readdir(path.join(out1, 'executions', executionId!))).sort();
    expect(files).toEqual(['downloads', 'logs.jsonl', 'output.json', 'recording.json', 'steps', 'steps.vtt', 'video.mp4']);
    // What the model saw at each step, named by step.
    // The browser toolset: the opening screen is the one image sent (the model read the rest as text).
    expect((await readdir(path.join(out1, 'executions', executionId!, 'steps'))).sort()).toEqual(['001.jpg']);
    const recording = path.join(out1, 'executions', executionId!, 'recording.json');
    const recorded = JSON.parse(await readFile(recording, 'utf8'));
    expect(recorded.turns).toHaveLength(3);
    expect(recordingFile.parse(recorded)).toEqual(recorded);

    const modelCalls = model.requests.length;
    const second = await cli(['run', '--spec', specFile, '--input', JSON.stringify(DEMO_INPUT), '--replay', recording, '--out', path.join(dir, 'out2')], { STEP_SCREENSHOTS: 'false' });
    expect(second.code, tail(second.stderr)).toBe(0);
    const [replayedId] = await readdir(path.join(dir, 'out2', 'executions'));
    expect(await readdir(path.join(dir, 'out2', 'executions', replayedId!))).not.toContain('steps');
    const doc2 = JSON.parse(second.stdout);
    expect(doc2.status).toBe('completed');
    expect(doc2.output).toEqual(doc1.output);
    // A replay says so in output.json; a run with a model does not.
    expect(doc2.playback).toEqual({ recording: 'recording.json', reason: expect.stringContaining('--replay') });
    expect(outputDocument.parse(doc2)).toEqual(doc2);
    expect(doc1).not.toHaveProperty('playback');
    expect({ ...doc2.counters, durationMs: 0 }).toEqual({ ...doc1.counters, durationMs: 0 });
    expect(model.requests.length).toBe(modelCalls);
    expect(shop.forms.filter((f) => f.path === '/order')).toHaveLength(2);
  });

  it('replays a recording made before the conversation rules changed (main, 2026-11-24) to the same result', async () => {
    // Made by the demo run on the worker as it was before append-only conversations and the
    // API's context management: its turns carry no thinking blocks and no notes.
    const recording = path.join('test', 'fixtures', 'recordings', 'demo-main-2026-11-24.json');
    const modelCalls = model.requests.length;
    const run = await cli(['run', '--spec', specFile, '--input', JSON.stringify(DEMO_INPUT), '--replay', recording, '--out', path.join(dir, 'out-main')], { STEP_SCREENSHOTS: 'false' });
    expect(run.code, tail(run.stderr)).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'completed', output: { orderId: 'A-1001' }, counters: { nSteps: 3, nAgentActions: 6, nScreenshots: 1 } });
    expect(model.requests.length).toBe(modelCalls);
  });

  it('exits 1 when the run fails, with output.json on stdout', async () => {
    const recordingDir = path.join(dir, 'out1', 'executions');
    const [executionId] = await readdir(recordingDir);
    const capped = path.join(dir, 'capped.json');
    await writeFile(capped, JSON.stringify({ ...DEMO_WORKFLOW(`${shop.origin}/`), maxSteps: 2 }));
    const run = await cli(['run', '--spec', capped, '--input', JSON.stringify(DEMO_INPUT), '--replay', path.join(recordingDir, executionId!, 'recording.json'), '--out', path.join(dir, 'out3')]);
    expect(run.code, tail(run.stderr)).toBe(1);
    const failed = JSON.parse(run.stdout);
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'max_steps' }, counters: { nSteps: 2 } });
    expect(outputDocument.parse(failed)).toEqual(failed);
  });

  it('exits 2 with a clear message on bad usage', async () => {
    const [noSpec, badInput, noModel, badConfig] = await Promise.all([
      cli(['run']),
      cli(['run', '--spec', specFile, '--input', '{nope']),
      cli(['run', '--spec', specFile]),
      cli(['run', '--spec', specFile], { MAX_STEPS: 'lots' }),
    ]);
    expect(noSpec.code).toBe(2);
    expect(noSpec.stderr).toContain('--spec FILE is required');
    expect(badInput.code).toBe(2);
    expect(badInput.stderr).toContain('--input is not valid JSON');
    expect(noModel.code).toBe(2);
    expect(noModel.stderr).toContain('ANTHROPIC_API_KEY');
    expect(badConfig.code).toBe(2);
    expect(badConfig.stderr).toContain('MAX_STEPS="lots"');
  });

  it('answers --help and -h on every command with its usage, exit 0', async () => {
    // Under load a process takes long to start: a generous limit, and few at once.
    const asked = await Promise.all([['run', '--help'], ['serve', '-h'], ['run', '--spec', specFile, '-h'], ['serve', '--help']].map((args) => cli(args, {}, 240_000)));
    for (const [i, result] of asked.entries()) {
      expect(result.code, `${i}: ${result.stderr}`).toBe(0);
      expect(result.stderr).toBe('');
      expect(result.stdout).toMatch(/^Usage/);
    }
    expect(asked[0]!.stdout).toContain('--replay FILE');
    expect(asked[2]!.stdout).toBe(asked[0]!.stdout);
    expect(asked[1]!.stdout).toContain('API_KEYS');
    expect(asked[1]!.stdout).not.toContain('--replay');
    expect(asked[3]!.stdout).toBe(asked[1]!.stdout);
  }, 300_000);

  it('lists every command in --help, and each of them answers its own --help', async () => {
    const top = await cli(['--help'], {}, 240_000);
    expect(top.code, top.stderr).toBe(0);
    const commands = [...new Set([...top.stdout.matchAll(/^ {2}execution-worker (\w+)/gm)].map((m) => m[1]!))].filter((name) => name !== 'help');
    expect(commands).toEqual(expect.arrayContaining(['run', 'serve', 'mcp']));
    for (const name of commands) {
      const own = await cli([name, '--help'], {}, 240_000);
      expect(own.code, `${name}: ${own.stderr}`).toBe(0);
      expect(own.stderr, name).toBe('');
      expect(own.stdout, name).toMatch(new RegExp(`^Usage: execution-worker ${name}\\b`));
    }
  }, 300_000);

  it('checks the specification as the API does: an unknown field is refused by name, exit 2', async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['a misspelt field', { ...DEMO_WORKFLOW(`${shop.origin}/`), maxStep: 3 }, /^ {2}maxStep: must NOT have additional properties$/m],
      ['a whole public suffix', { ...DEMO_WORKFLOW(`${shop.origin}/`), allowedDomains: ['*.com'] }, /^ {2}allowedDomains\[0\]: .*public suffix/m],
      ['no prompt', { allowedDomains: ['shop.test'] }, /^ {2}prompt: field required$/m],
      ['a payload schema that is not one', { ...DEMO_WORKFLOW(`${shop.origin}/`), payloadSchema: { type: 'nope' } }, /^ {2}payloadSchema: not a valid JSON Schema/m],
      ['a trigger field', { ...DEMO_WORKFLOW(`${shop.origin}/`), triggerType: 'schedule' }, /triggerType say how the API runs a version/],
    ];
    const results = await Promise.all(
      cases.map(async ([name, spec]) => {
        const file = path.join(dir, `bad-${name.replace(/\W+/g, '-')}.json`);
        await writeFile(file, JSON.stringify(spec));
        return cli(['run', '--spec', file, '--replay', path.join(dir, 'none.json')], { ANTHROPIC_API_KEY: 'sk-unused' }, 240_000);
      }),
    );
    for (const [i, [name, , expected]] of cases.entries()) {
      const result = results[i]!;
      expect(result.code, `${name}: ${result.stderr}`).toBe(2);
      expect(result.stderr, name).toMatch(expected);
      expect(result.stderr, name).not.toMatch(/^\s+at /m);
      expect(result.stdout).toBe('');
    }
  }, 300_000);

  it('names a bad variable on one line with no stack trace, for run and serve', async () => {
    const [rules, port] = await Promise.all([
      cli(['run', '--spec', specFile], { BROWSER_HOST_RULES: 'zzz', ANTHROPIC_API_KEY: 'sk-unused' }, 240_000),
      cli(['serve'], { PORT: 'abc', API_KEYS: 'k' }, 240_000),
    ]);
    expect(rules.code).toBe(2);
    expect(rules.stderr.trim().split('\n')).toEqual(['invalid configuration:', '  BROWSER_HOST_RULES="zzz": cannot parse "zzz" (expected "MAP pattern target" or "EXCLUDE pattern")']);
    expect(port.code).toBe(2);
    expect(port.stderr.trim().split('\n')).toEqual(['invalid configuration:', '  PORT="abc": must be a whole number from 0 to 65535']);
  }, 300_000);
});
