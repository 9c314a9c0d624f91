import { z } from 'zod';
import { deliveryList, deliveryQueued, webhookCreate, webhookCreated, webhookList } from '../../contract/webhooks.js';
import type { Logger } from '../../telemetry/types.js';
import { identityOf, OPERATOR as OPERATOR_ACCESS } from '../access.js';
import { optionalBody, type App } from '../app.js';
import { HttpError, notFound, unprocessable } from '../http-errors.js';
import { answer, commonErrors, errorAnswer, notFoundAnswer, pathParams } from '../openapi.js';
import type { Store } from '../store.js';
import type { DeliveryQueue } from './delivery-queue.js';
import { LOOKUP_TIMEOUT_MS, type TargetPolicy } from './target-policy.js';
import type { WebhookStore } from './webhook-store.js';

/**
 * Webhooks (docs/api.md#webhooks):
 *
 *   POST   /api/webhooks                                      `{ url, events, workflowId? }` → 201 with the secret, shown once
 *   GET    /api/webhooks                                      every webhook, never a secret
 *   DELETE /api/webhooks/{id}                                 → 204; what it was owed is dropped
 *   GET    /api/webhooks/{id}/deliveries                      each delivery and its attempts
 *   POST   /api/webhooks/{id}/deliveries/{deliveryId}/retry   send again, same id → 202
 *
 * The URL is checked before anything is kept and before any connection: its address, or every
 * address its name resolves to, must not be link-local, metadata, or private unless allowed
 * (targets.ts); a refusal is a 422 naming `url`.
 */

/** Webhooks are the operator's: a key, or the dashboard's session. */
const OPERATOR = OPERATOR_ACCESS;

export function addWebhookRoutes(app: App, deps: { store: Store; webhooks: WebhookStore; deliveries: DeliveryQueue; policy: TargetPolicy; logger: Logger }): void {
  const { store, webhooks, deliveries, policy, logger } = deps;

  app.post('/api/webhooks', {
    config: OPERATOR,
    schema: {
      summary: 'Make a webhook: the answer holds its signing secret, shown this once',
      description: 'Deliveries are POSTs of `{ type, id, timestamp, data: { execution } }` signed as the Standard Webhooks specification says (`webhook-id`, `webhook-timestamp`, `webhook-signature`), retried with backoff for at least 24 hours until a 2xx answer.',
      body: webhookCreate,
      response: { 201: answer('The webhook and its `secret`, shown once.', webhookCreated), 404: errorAnswer('No workflow of this workflowId.'), ...commonErrors },
    },
  }, async (request, reply) => {
    const { url, workflowId } = request.body;
    const events = [...new Set(request.body.events)];
    const parsed = policy.parse(url);
    if (!parsed.ok) throw unprocessable([{ loc: ['body', 'url'], msg: `the URL ${parsed.reason}`, type: 'url' }]);
    const checked = await policy.check(parsed.target, AbortSignal.timeout(LOOKUP_TIMEOUT_MS));
    if (!checked.ok) throw unprocessable([{ loc: ['body', 'url'], msg: `the URL is refused: ${checked.reason}`, type: 'url' }]);
    if (workflowId !== undefined && !(await store.getWorkflow(workflowId))) throw notFound(['body', 'workflowId'], 'workflow');
    const made = await webhooks.create({ url: parsed.target.url.href, events, workflowId: workflowId ?? null });
    if (!made.ok) throw unprocessable([{ loc: ['body'], msg: `at most ${made.full} webhooks: delete one to make another`, type: 'limit' }]);
    const { row, secret } = made;
    logger.info({ webhookId: row.id, events, workflowId: row.workflowId, by: identityOf(request.credential) }, 'webhook made');
    return reply.code(201).send({ ...row, secret });
  });

  app.get('/api/webhooks', {
    config: OPERATOR,
    schema: { summary: 'Every webhook, oldest first; never a secret', response: { 200: answer('`{ "items": [...] }`.', webhookList), ...commonErrors } },
  }, async () => ({ items: await webhooks.list() }));

  app.delete('/api/webhooks/:webhookId', {
    config: OPERATOR,
    schema: { summary: 'Delete a webhook: nothing more is sent to it', params: pathParams('webhookId'), response: { 204: answer('Deleted.'), 404: notFoundAnswer, ...commonErrors } },
  }, async (request, reply) => {
    if (!(await webhooks.remove(request.params.webhookId))) throw notFound(['path', 'webhookId'], 'webhook');
    logger.info({ webhookId: request.params.webhookId, by: identityOf(request.credential) }, 'webhook deleted');
    return reply.code(204).send();
  });

  app.get('/api/webhooks/:webhookId/deliveries', {
    config: OPERATOR,
    schema: {
      summary: "A webhook's deliveries, newest first, each with every attempt (time, status, latency, error)",
      params: pathParams('webhookId'),
      response: { 200: answer('`{ "items": [...] }`.', deliveryList), 404: notFoundAnswer, ...commonErrors },
    },
  }, async (request) => {
    const { webhookId } = request.params;
    if (!(await webhooks.get(webhookId))) throw notFound(['path', 'webhookId'], 'webhook');
    return { items: await webhooks.listDeliveries(webhookId) };
  });

  app.post('/api/webhooks/:webhookId/deliveries/:deliveryId/retry', {
    config: OPERATOR,
    preValidation: optionalBody,
    schema: {
      summary: 'Send a delivery again, with the same id, and a new round of attempts',
      params: pathParams('webhookId', 'deliveryId'),
      body: z.strictObject({}),
      response: { 202: answer('Queued.', deliveryQueued), 404: notFoundAnswer, 409: errorAnswer('A round of attempts is still pending.'), ...commonErrors },
    },
  }, async (request, reply) => {
    const { webhookId, deliveryId } = request.params;
    if (!(await webhooks.get(webhookId))) throw notFound(['path', 'webhookId'], 'webhook');
    const found = await webhooks.readDelivery(webhookId, deliveryId);
    if (!found) throw notFound(['path', 'deliveryId'], 'delivery');
    const pending = () => new HttpError(409, [{ loc: ['path', 'deliveryId'], msg: 'a round of attempts is still pending', type: 'conflict' }]);
    if (found.state === 'pending' || !(await deliveries.again(webhookId, deliveryId))) throw pending();
    logger.info({ webhookId, deliveryId, by: identityOf(request.credential) }, 'webhook delivery sent again');
    return reply.code(202).send({ id: deliveryId, state: 'pending' as const });
  });
}
