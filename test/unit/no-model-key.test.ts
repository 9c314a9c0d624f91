import { rm } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { modelFactory } from '../../src/compose.js';
import { loadConfig } from '../../src/config/schema.js';
import { ExecutionError } from '../../src/contract/errors.js';
import { NO_KEY_AT_START } from '../../src/model/no-key-client.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { tempDir } from '../support/env.js';
import { startRedis } from '../support/redis.js';
import { startTestWorker, uniqueName } from '../support/stack.js';

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
    try {
      const worker = await startTestWorker({
        redisUrl: redis.url,
        queueName: uniqueName('no-key'),
        apiUrl: 'http://127.0.0.1:9',
        key: 'k',
        logLevel: 'info',
        env: { ARTIFACTS_DIR: path.join(dir, 'artifacts'), WORK_DIR: path.join(dir, 'work') },
      });
      await worker.stop();
      const lines = worker.log.lines;
      expect(lines.filter((line) => /no Anthropic API key/.test(line.msg))).toEqual([expect.objectContaining({ level: 'warn', msg: NO_KEY_AT_START })]);
      expect(NO_KEY_AT_START).toMatch(/ANTHROPIC_API_KEY/);
    } finally {
      if (saved !== undefined) process.env.ANTHROPIC_AUTH_TOKEN = saved;
      await redis.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
