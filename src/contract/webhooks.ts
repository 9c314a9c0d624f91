/**
 * Webhooks on the local API (docs/api.md#webhooks): what makes one, how one is listed, the
 * secret shown once, each delivery and its attempts, and the event a delivery carries.
 */
import { z } from 'zod';
import { isoTime } from './json.js';

export const WEBHOOK_EVENTS = ['execution.started', 'execution.waiting', 'execution.completed', 'execution.failed'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Longest receiver URL taken. */
export const WEBHOOK_URL_MAX = 2048;

/** `POST /api/webhooks`. */
export const webhookCreate = z.strictObject({
  url: z.string().min(1).max(WEBHOOK_URL_MAX).meta({
    description:
      'Where deliveries are POSTed: `http://` or `https://`, no user name or password. A link-local or cloud metadata address (169.254.0.0/16, fe80::/10, fd00:ec2::254, in any spelling, or a name that resolves to one) is refused with 422; loopback and private addresses are allowed.',
  }),
  events: z.array(z.enum(WEBHOOK_EVENTS)).min(1).max(WEBHOOK_EVENTS.length).meta({ description: 'The events delivered; each at most once in the list.' }),
  workflowId: z.string().min(1).optional().meta({ description: "Deliver only this workflow's executions; absent: every workflow's." }),
});

/** A webhook as listed: never its secret. */
export const webhook = z.object({
  id: z.string().meta({ description: 'A uuid.' }),
  url: z.string(),
  events: z.array(z.enum(WEBHOOK_EVENTS)),
  workflowId: z.string().nullable().meta({ description: 'null: every workflow.' }),
  created_at: isoTime,
});
export type WebhookRow = z.infer<typeof webhook>;

export const webhookList = z.object({ items: z.array(webhook) });
export type WebhookList = z.infer<typeof webhookList>;

/** `201` of `POST /api/webhooks`: the webhook and its signing secret, shown this once. */
export const webhookCreated = webhook.extend({
  secret: z.string().meta({ description: 'The signing secret (`whsec_` + base64), shown this once. Deliveries are signed with it as the Standard Webhooks specification says.' }),
});
export type WebhookCreated = z.infer<typeof webhookCreated>;

/** One try at sending a delivery. */
export const deliveryAttempt = z.object({
  attemptedAt: isoTime,
  status: z.number().int().nullable().meta({ description: "The receiver's HTTP status; null when none came (refused, timed out, unreachable)." }),
  latencyMs: z.number().int().min(0),
  error: z.string().nullable().meta({ description: 'Why the attempt did not count as delivered; null when it did (2xx).' }),
});
export type DeliveryAttempt = z.infer<typeof deliveryAttempt>;

export const DELIVERY_STATES = ['pending', 'delivered', 'failed'] as const;

/** One event sent to one webhook, with every attempt at it. */
export const delivery = z.object({
  id: z.string().meta({ description: 'The `webhook-id` of every attempt, and the event\'s `id`.' }),
  type: z.enum(WEBHOOK_EVENTS),
  executionId: z.string(),
  created_at: isoTime,
  state: z.enum(DELIVERY_STATES).meta({ description: '`pending`: not delivered yet, more attempts to come; `delivered`: a 2xx came; `failed`: the attempts ran out.' }),
  attempts: z.array(deliveryAttempt).meta({ description: 'Oldest first.' }),
});
export type DeliveryRow = z.infer<typeof delivery>;

export const deliveryList = z.object({ items: z.array(delivery).meta({ description: 'Newest first; the last 200 kept.' }) });
export type DeliveryList = z.infer<typeof deliveryList>;

/** `202` of a send-again. */
export const deliveryQueued = z.object({ id: z.string(), state: z.literal('pending') });
