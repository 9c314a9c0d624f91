import { describe, expect, it } from 'vitest';
import { modelFactory } from '../../src/compose.js';
import { loadConfig } from '../../src/config/schema.js';
import { ExecutionError } from '../../src/contract/errors.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';

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
