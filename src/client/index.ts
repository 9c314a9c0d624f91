import createFetchClient, { type Client } from 'openapi-fetch';
import { Webhook } from 'standardwebhooks';
import type { components, paths } from './openapi.generated.js';

/**
 * The typed client of the local API (docs/client.md): `import { createClient } from
 * 'execution-worker/client'`. Every route of the OpenAPI document `serve` publishes is a call
 * (`client.GET('/api/executions/{executionId}', { params: { path: { executionId } } })`), typed by
 * the types generated from that document at build time (openapi.generated.ts): no shape here is
 * written by hand. Errors are values, as openapi-fetch gives them: each call resolves to
 * `{ data, error, response }`, `error` the document's error body (`{ detail: [...] }`) when the
 * status is not 2xx; only a failure to reach the service throws. Beside the routes: polling an
 * execution until it ends, and checking a webhook delivery's signature.
 */

export type { components, paths } from './openapi.generated.js';
export type Execution = components['schemas']['Execution'];
export type ErrorBody = components['schemas']['ErrorBody'];

export interface ClientOptions {
  /** The service, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** Sent as `X-Service-Key` on every call. */
  apiKey: string;
  /** A fetch of your own (tests, proxies); the global one by default. */
  fetch?: typeof globalThis.fetch;
}

export type ApiClient = Client<paths> & {
  /**
   * Polls `GET /api/executions/{id}` every `intervalMs` (default 1000) until the execution is
   * completed or failed, and answers it; an error answer (unknown id, bad key) is returned as is.
   */
  waitForExecution(executionId: string, options?: { intervalMs?: number; signal?: AbortSignal }): Promise<{ data: Execution; error?: undefined } | { data?: undefined; error: ErrorBody; status: number }>;
};

export function createClient(options: ClientOptions): ApiClient {
  const client = createFetchClient<paths>({ baseUrl: options.baseUrl.replace(/\/+$/, ''), headers: { 'X-Service-Key': options.apiKey }, ...(options.fetch ? { fetch: options.fetch } : {}) });
  return Object.assign(client, {
    async waitForExecution(executionId: string, opts: { intervalMs?: number; signal?: AbortSignal } = {}) {
      const { setTimeout: pause } = await import('node:timers/promises');
      for (;;) {
        const { data, error, response } = await client.GET('/api/executions/{executionId}', { params: { path: { executionId } }, ...(opts.signal ? { signal: opts.signal } : {}) });
        if (error) return { error: error as ErrorBody, status: response.status };
        if (data && (data.status === 'completed' || data.status === 'failed')) return { data };
        await pause(opts.intervalMs ?? 1000, undefined, opts.signal ? { signal: opts.signal } : {});
      }
    },
  });
}

/** A webhook delivery's event (docs/api.md#webhooks). */
export interface WebhookDelivery {
  type: 'execution.started' | 'execution.waiting' | 'execution.completed' | 'execution.failed';
  id: string;
  timestamp: string;
  data: { execution: Execution };
}

/**
 * Checks a delivery's Standard Webhooks signature (`webhook-id`, `webhook-timestamp` within five
 * minutes, `webhook-signature`) over the raw body, with the webhook's secret, and answers the
 * event; throws `WebhookVerificationError` (from `standardwebhooks`) when it does not hold.
 */
export function verifyWebhook(secret: string, rawBody: string | Buffer, headers: Record<string, string | string[] | undefined>): WebhookDelivery {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(' ') : value; // Standard Webhooks separates signatures by spaces
  return new Webhook(secret).verify(rawBody, flat) as WebhookDelivery;
}

export { WebhookVerificationError } from 'standardwebhooks';
