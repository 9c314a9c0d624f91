import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { cp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/env.js';

/**
 * The README's first command, run as a newcomer runs it: `npm run demo` in a copy of the
 * repository. It must end with a completed execution whose video and logs exist.
 */

let copy: string;
const ROOT = path.resolve('.');

beforeAll(async () => {
  copy = await tempDir('demo-copy');
  const skip = new Set(['node_modules', '.git', '.demo', 'artifacts', '.test-output', 'coverage']);
  for (const entry of await readdir(ROOT)) {
    if (skip.has(entry)) continue;
    await cp(path.join(ROOT, entry), path.join(copy, entry), { recursive: true });
  }
  // Installed packages are shared rather than installed again (no network in tests).
  await symlink(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
});

afterAll(async () => {
  if (copy) await rm(copy, { recursive: true, force: true });
});

describe('npm run demo', () => {
  it('runs the demo workflow to a completed execution with its video and logs', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, DEMO_EXIT: '1', PORT: '0', ANTHROPIC_API_KEY: '', REDIS_URL: '', LOG_LEVEL: 'warn' };
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn('npm', ['run', '--silent', 'demo'], { cwd: copy, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(result.code, result.stderr).toBe(0);
    // The demo runs the worker under tsx: the page-side settle check must still run there.
    expect(result.stderr).not.toContain('could not run the settle check');
    expect(result.stdout).toContain('replaying demo/shop.recording.json');
    expect(result.stdout).toMatch(/status (queued|running)/);
    const executionId = /Executing ([0-9a-f-]{36})/.exec(result.stdout)?.[1];
    expect(executionId).toBeDefined();
    expect(result.stdout).toContain('"status": "completed"');
    // The link to watch it live opens the execution signed in; once the server has stopped
    // (DEMO_EXIT=1) no link to it is printed, the folder of its files is.
    const links = [...result.stdout.matchAll(/(http:\/\/\S+\/login\?token=\S+)/g)].map((m) => m[1]);
    expect(links).toHaveLength(1);
    const closing = result.stdout.slice(result.stdout.lastIndexOf('\n}\n'));
    expect(closing).not.toMatch(/http:\/\//);
    expect(closing).toMatch(/replayed demo\/shop\.recording\.json instead of calling a model: ANTHROPIC_API_KEY is not set/);
    const folder = path.join(copy, '.demo', 'artifacts', 'executions', executionId!);
    expect(closing).toContain(folder);
    const files = await readdir(folder);
    expect(files).toEqual(expect.arrayContaining(['video.mp4', 'logs.jsonl', 'output.json', 'steps.vtt', 'recording.json']));
    const output = JSON.parse(await readFile(path.join(folder, 'output.json'), 'utf8'));
    expect(output.playback).toEqual({ recording: 'shop.recording.json', reason: expect.stringMatching(/ANTHROPIC_API_KEY is not set/) });
  });
});

/** Every process below `root` now (children, theirs, …), from ps. */
function descendants(root: number): number[] {
  const rows = execFileSync('ps', ['-e', '-o', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number) as [number, number]);
  const found: number[] = [];
  const walk = (pid: number) => {
    for (const [child, parent] of rows) {
      if (parent !== pid) continue;
      found.push(child);
      walk(child);
    }
  };
  walk(root);
  return found;
}

/** Whether `pid` still runs: a process that ended but is not yet reaped (a zombie) does not. */
const alive = (pid: number): boolean => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] !== 'Z';
  } catch {
    return false;
  }
};

/**
 * The processes of `pids` still running once every one has had `limitMs` to end. No event tells
 * the end of a process that is not our child (Chromium's helpers end after their browser), so
 * this looks every 200 ms.
 */
async function leftRunning(pids: readonly number[], limitMs = 30_000): Promise<number[]> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const running = pids.filter(alive);
    if (running.length === 0 || Date.now() > deadline) return running;
    await delay(200);
  }
}

/** Resolves with the output so far once `pattern` appears in it. */
async function waitFor(child: ChildProcess, output: { text: string }, pattern: RegExp): Promise<RegExpExecArray> {
  for (;;) {
    const found = pattern.exec(output.text);
    if (found) return found;
    const [chunk] = (await Promise.race([once(child.stdout!, 'data'), once(child, 'exit').then(() => { throw new Error(`the demo exited before ${pattern}:\n${output.text}`); })])) as [Buffer];
    void chunk;
  }
}

describe('npm run demo, stopped', () => {
  // A terminal's Ctrl-C is SIGINT to the whole foreground process group (npm, node, and formerly
  // the private Redis), in no set order; a supervisor may signal the demo's process, or npm, alone.
  const ways: [string, (group: number, demo: number) => void][] = [
    ['Ctrl-C (SIGINT to the process group) while the execution runs', (group) => process.kill(-group, 'SIGINT')],
    ['SIGINT to the demo process, then the group, once idle', (group, demo) => (process.kill(demo, 'SIGINT'), process.kill(-group, 'SIGINT'))],
    ['SIGINT to the group, then the demo process, while the execution runs', (group, demo) => (process.kill(-group, 'SIGINT'), process.kill(demo, 'SIGINT'))],
    // npm passes a signal on to the script it runs: the script must be the demo (no shell between).
    ['SIGINT to npm alone (a supervisor signals the process it started) while the execution runs', (group) => process.kill(group, 'SIGINT')],
  ];
  it.each(ways)('stops cleanly on %s, leaving nothing running', async (name, signal) => {
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', ANTHROPIC_API_KEY: '', REDIS_URL: '', LOG_LEVEL: 'warn', DEMO_EXIT: '' };
    // Its own process group, as a terminal gives a foreground job.
    const child = spawn('npm', ['run', '--silent', 'demo'], { cwd: copy, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const output = { text: '' };
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (output.text += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    // 'close': npm has exited and every process holding its output has too (the demo's node).
    const exited = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
    try {
      const idle = name.includes('idle');
      await waitFor(child, output, idle ? /Press Ctrl-C to stop/ : /Executing [0-9a-f-]{36}/);
      const processes = descendants(child.pid!);
      const commands = new Map(processes.map((pid) => [pid, execFileSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' }).trim()]));
      const demo = processes.find((pid) => /demo\/run\.ts/.test(execFileSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' })));
      expect(demo, 'the demo process').toBeDefined();
      expect(processes.some((pid) => /redis-server/.test(execFileSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' }))), 'its redis').toBe(true);
      if (idle) {
        // Another workflow is not replayed as the shop order: it fails at once, saying why.
        const key = /\(API key: (\S+)\)/.exec(output.text)![1]!;
        const base = /Local API and dashboard: (\S+?)\/ /.exec(output.text)![1]!;
        const call = async (method: string, route: string, body?: unknown) =>
          (await (await fetch(`${base}${route}`, { method, headers: { 'x-service-key': key, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) })).json()) as Record<string, unknown>;
        const other = await call('POST', '/api/workflows', { prompt: 'Open the shop and read the title', allowedDomains: ['shop.test'] });
        const run = await call('POST', `/api/workflows/${String(other.workflow_uuid)}/execute`, {});
        let seen: Record<string, unknown> = run;
        while (seen.status !== 'failed' && seen.status !== 'completed') seen = await call('GET', `/api/executions/${String(run.execution_uuid)}`);
        expect(seen.status).toBe('failed');
        expect(seen.error).toMatchObject({ code: 'model_error', message: expect.stringMatching(/replays shop\.recording\.json.*needs ANTHROPIC_API_KEY/) });
      }
      const signalledAt = Date.now();
      signal(child.pid!, demo!);
      const [code, killedBy] = await exited;
      // Its own stop, not a kill: the demo exits 130 (npm passes it on, or dies of the same
      // SIGINT itself), having said so, with no Redis connection errors on the way.
      expect(code === 130 || killedBy === 'SIGINT', `${code} ${killedBy}: ${stderr}`).toBe(true);
      expect(output.text).toContain('Stopping …');
      expect(stderr).not.toMatch(/ECONNREFUSED/);
      expect(Date.now() - signalledAt).toBeLessThan(60_000);
      expect((await leftRunning(processes)).map((pid) => `${pid} ${commands.get(pid) ?? ''}`)).toEqual([]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        process.kill(-child.pid!, 'SIGKILL');
        await exited;
      }
    }
  }, 300_000);
});
