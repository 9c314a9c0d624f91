import { spawn } from 'node:child_process';
import { cp, readdir, rm, symlink } from 'node:fs/promises';
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
    // The dashboard links open the execution signed in, without a key to paste.
    const links = [...result.stdout.matchAll(/(http:\/\/\S+\/login\?token=\S+)/g)].map((m) => m[1]);
    expect(links).toHaveLength(2);
    const files = await readdir(path.join(copy, '.demo', 'artifacts', 'executions', executionId!));
    expect(files).toEqual(expect.arrayContaining(['video.mp4', 'logs.jsonl', 'output.json', 'steps.vtt', 'recording.json']));
  });
});
