import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSpoolingStore } from '../../src/storage/spool.js';
import type { ArtifactStore } from '../../src/storage/types.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { tempDir } from '../support/env.js';

function flakyStore(state: { up: boolean }) {
  const uploaded = new Map<string, string>();
  const store: ArtifactStore = {
    async put(executionId, name, body) {
      if (!state.up) throw new Error('connect ECONNREFUSED');
      const data = body.kind === 'file' ? await readFile(body.path, 'utf8') : String(body.data);
      uploaded.set(`${executionId}/${name}`, data);
      return { key: `executions/${executionId}/${name}`, url: `s3://b/executions/${executionId}/${name}`, bytes: data.length };
    },
  };
  return { store, uploaded };
}

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

describe('spooling artifact store', () => {
  it('keeps what the store refused and uploads it when storage is back, even after a restart', async () => {
    const dir = await tempDir('spool');
    dirs.push(dir);
    const source = path.join(dir, 'logs.jsonl');
    await writeFile(source, '{"type":"x"}\n');
    const state = { up: false };
    const { store, uploaded } = flakyStore(state);

    const first = createSpoolingStore({ inner: store, dir: path.join(dir, 'spool'), logger: createSilentLogger(), retryEveryMs: 60_000 });
    await expect(first.put('e1', 'logs.jsonl', { kind: 'file', path: source }, 'application/x-ndjson')).rejects.toThrow(/ECONNREFUSED/);
    // A name with a sub-folder (a step screenshot) is kept and found again too.
    await expect(first.put('e1', 'steps/001.jpg', { kind: 'buffer', data: 'jpeg bytes' }, 'image/jpeg')).rejects.toThrow(/ECONNREFUSED/);
    expect(first.depth()).toBe(2);
    await first.close();
    await rm(source);

    // A new process, storage back: the spooled file is uploaded from the spool alone.
    state.up = true;
    let retried = 0;
    const second = createSpoolingStore({ inner: store, dir: path.join(dir, 'spool'), logger: createSilentLogger(), retryEveryMs: 1, onRetry: () => retried++ });
    await second.resume();
    expect(second.depth()).toBe(2);
    await expect.poll(() => second.depth(), { timeout: 5_000, interval: 5 }).toBe(0);
    expect(uploaded.get('e1/logs.jsonl')).toBe('{"type":"x"}\n');
    expect(uploaded.get('e1/steps/001.jpg')).toBe('jpeg bytes');
    expect(retried).toBe(2);
    const left = await readdir(path.join(dir, 'spool', 'e1'), { recursive: true, withFileTypes: true });
    expect(left.filter((entry) => entry.isFile())).toEqual([]);
    await second.close();
  });

  it('passes through when the store works', async () => {
    const dir = await tempDir('spool');
    dirs.push(dir);
    const { store } = flakyStore({ up: true });
    const spool = createSpoolingStore({ inner: store, dir, logger: createSilentLogger() });
    await expect(spool.put('e2', 'output.json', { kind: 'buffer', data: '{}' }, 'application/json')).resolves.toMatchObject({ url: 's3://b/executions/e2/output.json' });
    expect(spool.depth()).toBe(0);
    await spool.close();
  });
});
