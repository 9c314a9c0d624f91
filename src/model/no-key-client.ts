import { ExecutionError } from '../contract/errors.js';
import type { ModelClient } from './types.js';

/**
 * The model of a worker that has no Anthropic key (docs/operations.md#no-model-key): every turn fails at
 * once with a `model_error` that says what to do, before a request is made, instead of the SDK's
 * "Could not resolve authentication method" after it.
 */

export const NO_KEY_MESSAGE =
  "no Anthropic API key: set ANTHROPIC_API_KEY in the worker's environment and restart it (docs/configuration.md), or run a recording with `execution-worker run --replay FILE`";

/** The one line a process without a key logs at start (the daemon, `serve`). */
export const NO_KEY_AT_START = 'no Anthropic API key (ANTHROPIC_API_KEY is not set): every execution a worker runs without one fails with model_error; set it and restart the worker';

/** Whether the SDK would find no credential: no ANTHROPIC_API_KEY and no ANTHROPIC_AUTH_TOKEN. */
export function modelKeyMissing(apiKey: string | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  return !apiKey && !env.ANTHROPIC_AUTH_TOKEN?.trim();
}

export function createNoKeyModel(): ModelClient {
  return {
    async createTurn(_request, signal) {
      if (signal.aborted) throw signal.reason;
      throw new ExecutionError('model_error', NO_KEY_MESSAGE);
    },
  };
}
