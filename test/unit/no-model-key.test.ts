import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { modelFactory } from '../../src/compose.js';
import { loadConfig } from '../../src/config/schema.js';
import { ExecutionError } from '../../src/contract/errors.js';
import { startDaemon } from '../../src/daemon.js';
import { NO_KEY_AT_START } from '../../src/model/no-key-client.js';
import { createLogger, createSilentLogger } from '../../src/telemetry/logger.js';
import { tempDir } from '../support/env.js';
import { startRedis } from '../support/redis.js';

/**
 * A worker with no Anthropic key (docs/operations.md#no-model-key): each run fails at its first
 * turn with a model_error a person can act on, before any request, not with the SDK's
 * "Could not resolve authentication method".
 */
describe('a worker without a model key', () => {
  it('fails each turn with model_error naming ANTHROPIC_API_KEY, and sends nothing', async () => {
    const saved = { key: process.env.ANTHROPIC_API_KEY, token: process.env.ANTHROPIC_AUTH_TOKEN };
    delete process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_AUTH_TOKEN;
    try {
      // A base URL nothing listens on: a request made would fail another way.
      const config = loadConfig({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' });
      const model = modelFactory(config, createSilentLogger())({ modelId: 'claude-sonnet-4-5', toolVersion: 'browser', display: { width: 1280, height: 800 } });
      const turn = model.client.createTurn({ model: 'claude-sonnet-4-5' } as never, new AbortController().signal);
      await expect(turn).rejects.toBeInstanceOf(ExecutionError);
      await expect(turn).rejects.toMatchObject({ code: 'model_error', message: expect.stringMatching(/^no Anthropic API key: set ANTHROPIC_API_KEY/) });
      await expect(turn).rejects.not.toMatchObject({ message: expect.stringContaining('authentication method') });
    } finally {
      if (saved.key !== undefined) process.env.ANTHROPIC_API_KEY = saved.key;
      if (saved.token !== undefined) process.env.ANTHROPIC_AUTH_TOKEN = saved.token;
    }
  });
});

describe('a daemon started without a model key', () => {
  it('says so once, at start, in one line that names ANTHROPIC_API_KEY', async () => {
    const saved = process.env.ANTHROPIC_AUTH_TOKEN;
    delete process.env.ANTHROPIC_AUTH_TOKEN;
    const [redis, dir] = await Promise.all([startRedis(), tempDir('no-key-daemon')]);
    const stream = new PassThrough();
    let log = '';
    stream.on('data', (chunk: Buffer) => (log += chunk.toString()));
    try {
      const config = loadConfig({
        REDIS_URL: redis.url,
        EXECUTION_QUEUE: `no-key-${randomUUID().slice(0, 8)}`,
        API_BASE_URL: 'http://127.0.0.1:9',
        API_KEY: 'k',
        ARTIFACTS_DIR: path.join(dir, 'artifacts'),
        WORK_DIR: path.join(dir, 'work'),
      });
      const daemon = await startDaemon(config, createLogger({ level: 'info', destination: stream }));
      await daemon.shutdown('test over');
      const lines = log.trim().split('\n').map((line) => JSON.parse(line) as { level: string; msg: string });
      expect(lines.filter((line) => /no Anthropic API key/.test(line.msg))).toEqual([expect.objectContaining({ level: 'warn', msg: NO_KEY_AT_START })]);
      expect(NO_KEY_AT_START).toMatch(/ANTHROPIC_API_KEY/);
    } finally {
      if (saved !== undefined) process.env.ANTHROPIC_AUTH_TOKEN = saved;
      await redis.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
