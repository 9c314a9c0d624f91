import type { Logger } from '../telemetry/types.js';
import { createApp } from './app.js';
import { addRoutes } from './server.js';
import { addWebhookRoutes } from './webhooks/webhook-routes.js';

/**
 * The OpenAPI document `serve` publishes at `/openapi.json`, built without Redis: every route is
 * declared on an app whose parts are never called (the document is made from the routes'
 * schemas alone, openapi.ts). The typed client's types are generated from it at build time
 * (scripts/build-client-types.ts, docs/client.md), so they are the served document's.
 */

/** A part no handler of the document's app may use: reading any field of it throws. */
const unused = new Proxy({}, { get: (_t, field) => { throw new Error(`the OpenAPI document's app has no ${String(field)}`); } }) as never;

export async function buildOpenApiDocument(): Promise<Record<string, unknown>> {
  const noop = () => undefined;
  const log: Logger = { debug: noop, info: noop, warn: noop, error: noop, child: () => log };
  const { app } = createApp(log);
  const webhooks = { addRoutes: (target: typeof app) => addWebhookRoutes(target, { store: unused, webhooks: unused, deliveries: unused, policy: unused, logger: log }), observe: unused, close: unused };
  await addRoutes(app, {
    auth: unused, apiKeys: unused, store: unused, queue: unused, live: unused, schedules: unused, webhooks: webhooks as never, redis: unused, keyPrefix: '', log,
    opts: { port: 0, apiKeys: [], redisUrl: '', queueName: '', queuePrefix: '', logger: log },
    port: () => 0, baseUrl: () => '',
  });
  await app.ready();
  const document = app.swagger() as unknown as Record<string, unknown>;
  await app.close();
  return document;
}
