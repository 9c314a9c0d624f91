import type { Redis } from 'ioredis';
import type { ExecutionStatus } from '../../contract/executions.js';
import type { WebhookEvent } from '../../contract/webhooks.js';
import type { ProfileKeyring } from '../../domain/profile-crypto.js';
import type { Logger } from '../../telemetry/types.js';
import type { App } from '../app.js';
import type { Store } from '../store.js';
import { createDeliveryQueue } from './delivery-queue.js';
import type { SendOptions } from './send.js';
import { createTargetPolicy } from './target-policy.js';
import type { Resolve } from './targets.js';
import { addWebhookRoutes } from './webhook-routes.js';
import { createWebhookStore } from './webhook-store.js';

/**
 * Webhooks on the local service (docs/api.md#webhooks), wired in one place: their store, their
 * delivery queue, their routes, and the one point every execution's status passes through — the
 * store's `transition` — observed, so that no route has to remember to announce what it did.
 */

export interface WebhookOptions {
  redis: Redis;
  keyPrefix: string;
  redisUrl: string;
  queueName: string;
  queuePrefix: string;
  /** PROFILE_KEYS: the webhooks' secrets are sealed with them; none keeps them as they are. */
  keys?: ProfileKeyring;
  logger: Logger;
  /** The pauses before each retry (WEBHOOK_RETRY_SCHEDULE_MS). */
  retryScheduleMs?: readonly number[];
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: private and CGNAT ranges may be receivers. Default false. */
  allowPrivateNetworks?: boolean;
  /** Name resolution and socket opening of deliveries (tests watch them). */
  resolve?: Resolve;
  connect?: SendOptions['connect'];
}

/** The event a change of status is, if any: a run resumed after a person answered is none. */
export function eventOf(from: readonly ExecutionStatus[], to: ExecutionStatus): WebhookEvent | undefined {
  if (to === 'running') return from.includes('queued') ? 'execution.started' : undefined;
  if (to === 'waiting') return 'execution.waiting';
  if (to === 'completed') return 'execution.completed';
  if (to === 'failed') return 'execution.failed';
  return undefined;
}

export function createWebhooks(opts: WebhookOptions) {
  const log = opts.logger.child({ component: 'webhooks' });
  const store = createWebhookStore(opts.redis, opts.keyPrefix, opts.keys);
  const policy = createTargetPolicy({ rules: { allowPrivateNetworks: opts.allowPrivateNetworks ?? false }, ...(opts.resolve ? { resolve: opts.resolve } : {}) });
  const deliveries = createDeliveryQueue({
    redisUrl: opts.redisUrl,
    queueName: opts.queueName,
    queuePrefix: opts.queuePrefix,
    store,
    logger: log,
    ...(opts.retryScheduleMs ? { retryScheduleMs: opts.retryScheduleMs } : {}),
    send: { policy, ...(opts.connect ? { connect: opts.connect } : {}) },
  });
  // Without PROFILE_KEYS a secret is kept as it is: said once, and only when there is one to keep
  // (a webhook already there at the start, or the first one made), not at every start of a
  // service that has none.
  let warned = false;
  const warnUnsealed = () => {
    if (opts.keys || warned) return;
    warned = true;
    log.warn({}, 'PROFILE_KEYS is not set: webhook secrets are kept in Redis unencrypted');
  };
  const ready = opts.keys
    ? Promise.resolve()
    : store.list().then(
        (rows) => {
          if (rows.length > 0) warnUnsealed();
        },
        () => undefined,
      );
  const routeStore: typeof store = {
    ...store,
    async create(input) {
      const made = await store.create(input);
      if (made.ok) warnUnsealed();
      return made;
    },
  };

  return {
    /**
     * The store whose transitions announce themselves: a transition that went through (or was
     * the repeat of one) queues its event before it is answered. Queueing that fails fails the
     * report, which the worker retries with the same time, so the event is queued then.
     */
    observe(executions: Store): Store {
      const transition: Store['transition'] = async (id, change) => {
        const result = await executions.transition(id, change);
        const type = eventOf(change.from, change.to);
        if (result.kind === 'ok' && type) await deliveries.publish(type, result.execution, await store.list());
        return result;
      };
      return { ...executions, transition };
    },

    addRoutes(app: App, executions: Store): void {
      addWebhookRoutes(app, { store: executions, webhooks: routeStore, deliveries, policy, logger: log });
    },

    /** Settles once the start's look at the stored webhooks is done (its warning, if any, written). */
    ready,

    close: async () => {
      await ready;
      await deliveries.close();
    },
  };
}

export type Webhooks = ReturnType<typeof createWebhooks>;
