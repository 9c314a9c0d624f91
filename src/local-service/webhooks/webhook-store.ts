import { randomBytes, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { delivery, deliveryAttempt, webhook, type DeliveryAttempt, type DeliveryRow, type WebhookEvent, type WebhookRow } from '../../contract/webhooks.js';
import type { ProfileKeyring } from '../../domain/profile-crypto.js';
import { openValue, sealValue } from '../../domain/sealed-values.js';

/**
 * Webhooks and their deliveries in Redis, under the API's prefix (docs/api.md#webhooks):
 *
 *   webhooks                          zset  webhook id, by creation
 *   webhook:{id}                      hash  `row` (JSON), `secret` (sealed, or `plain:` + secret)
 *   webhook:{id}:deliveries           zset  delivery id, by creation (the last 200, of the last 30 days)
 *   webhook:{id}:delivery:{did}       hash  `meta` (JSON: type, execution, body, state), `attempts` (JSON list,
 *                                           the last 50); expires 30 days after it was made
 *
 * What a caller can make is bounded: at most 100 webhooks (checked and added in one script, so
 * two requests at once cannot pass it together), 200 deliveries each, 50 attempts a delivery.
 *
 * The secret is needed in clear to sign, so it cannot be kept as a hash is. With PROFILE_KEYS it
 * is sealed with them (AES-256-GCM, its purpose and the webhook id bound: sealed-values.ts);
 * without, it is kept as it is and the service says so at start (docs/secrets.md#at-rest).
 */

const KEPT_DELIVERIES = 200;
export const MAX_WEBHOOKS = 100;
export const KEPT_ATTEMPTS = 50;
export const DELIVERY_LIFETIME_MS = 30 * 86_400_000;
const PLAIN = 'plain:';

const deliveryMeta = z.object({
  id: z.string(),
  type: delivery.shape.type,
  executionId: z.string(),
  created_at: z.string(),
  state: delivery.shape.state,
  body: z.string(),
});
type DeliveryMeta = z.infer<typeof deliveryMeta>;

/** A new secret as Standard Webhooks writes one: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export function createWebhookStore(redis: Redis, prefix: string, keys: ProfileKeyring | undefined, limits: { maxWebhooks?: number; deliveryLifetimeMs?: number } = {}) {
  const maxWebhooks = limits.maxWebhooks ?? MAX_WEBHOOKS;
  const lifetimeMs = limits.deliveryLifetimeMs ?? DELIVERY_LIFETIME_MS;
  const key = {
    all: `${prefix}webhooks`,
    one: (id: string) => `${prefix}webhook:${id}`,
    deliveries: (id: string) => `${prefix}webhook:${id}:deliveries`,
    delivery: (id: string, did: string) => `${prefix}webhook:${id}:delivery:${did}`,
  };
  const purpose = (id: string) => `webhook-secret:${id}`;

  const readRow = (text: string | null): WebhookRow | undefined => (text === null ? undefined : webhook.parse(JSON.parse(text)));

  async function get(id: string): Promise<WebhookRow | undefined> {
    return readRow(await redis.hget(key.one(id), 'row'));
  }

  async function readDelivery(id: string, did: string): Promise<DeliveryRow | undefined> {
    const [meta, attempts] = await redis.hmget(key.delivery(id, did), 'meta', 'attempts');
    if (meta === null || meta === undefined) return undefined;
    const m = deliveryMeta.parse(JSON.parse(meta));
    return { id: m.id, type: m.type, executionId: m.executionId, created_at: m.created_at, state: m.state, attempts: z.array(deliveryAttempt).parse(JSON.parse(attempts ?? '[]')) };
  }

  return {
    get,

    /** A new webhook and its secret, or `full` when there are `maxWebhooks` already. */
    async create(input: { url: string; events: WebhookEvent[]; workflowId: string | null }): Promise<{ ok: true; row: WebhookRow; secret: string } | { ok: false; full: number }> {
      const row: WebhookRow = { id: randomUUID(), url: input.url, events: input.events, workflowId: input.workflowId, created_at: new Date().toISOString() };
      const secret = newWebhookSecret();
      const kept = keys ? sealValue(purpose(row.id), secret, keys) : `${PLAIN}${secret}`;
      const added = await redis.eval(CREATE_SCRIPT, 2, key.all, key.one(row.id), String(maxWebhooks), String(Date.now()), row.id, JSON.stringify(row), kept);
      return added === 1 ? { ok: true, row, secret } : { ok: false, full: maxWebhooks };
    },

    async list(): Promise<WebhookRow[]> {
      const ids = await redis.zrange(key.all, 0, '-1');
      if (ids.length === 0) return [];
      const pipeline = redis.pipeline();
      for (const id of ids) pipeline.hget(key.one(id), 'row');
      const rows: WebhookRow[] = [];
      for (const [error, text] of (await pipeline.exec()) ?? []) {
        if (error) throw error;
        const row = readRow(text as string | null);
        if (row) rows.push(row);
      }
      return rows;
    },

    /** The secret to sign with, or why it cannot be read (the reason holds no secret). */
    async secret(id: string): Promise<{ ok: true; secret: string } | { ok: false; reason: string }> {
      const kept = await redis.hget(key.one(id), 'secret');
      if (kept === null) return { ok: false, reason: 'the webhook is gone' };
      if (kept.startsWith(PLAIN)) return { ok: true, secret: kept.slice(PLAIN.length) };
      const opened = openValue(purpose(id), kept, keys);
      if (!opened.ok) return { ok: false, reason: `its secret cannot be opened: ${opened.reason}` };
      return typeof opened.value === 'string' ? { ok: true, secret: opened.value } : { ok: false, reason: 'its secret is not a string' };
    },

    async remove(id: string): Promise<boolean> {
      const dids = await redis.zrange(key.deliveries(id), 0, '-1');
      const tx = redis.multi().del(key.one(id), key.deliveries(id)).zrem(key.all, id);
      for (const did of dids) tx.del(key.delivery(id, did));
      const results = await tx.exec();
      // [0] the DEL of the webhook and its list, [1] the ZREM that says whether it was there.
      return results?.[1]?.[1] === 1;
    },

    /** Records a delivery about to be queued; false when it was recorded before (the same event again). */
    async addDelivery(id: string, meta: Omit<DeliveryMeta, 'state'>): Promise<boolean> {
      const created = await redis.hsetnx(key.delivery(id, meta.id), 'meta', JSON.stringify({ ...meta, state: 'pending' }));
      if (created === 0) return false;
      const now = Date.now();
      await redis.multi().pexpire(key.delivery(id, meta.id), lifetimeMs).zadd(key.deliveries(id), now, meta.id).zremrangebyscore(key.deliveries(id), '-inf', String(now - lifetimeMs)).exec();
      // The oldest beyond what is kept go, with their attempts.
      const old = await redis.zrange(key.deliveries(id), 0, String(-(KEPT_DELIVERIES + 1)));
      if (old.length > 0) {
        const tx = redis.multi().zrem(key.deliveries(id), ...old);
        for (const did of old) tx.del(key.delivery(id, did));
        await tx.exec();
      }
      return true;
    },

    /** The body a delivery carries, for an attempt. */
    async deliveryBody(id: string, did: string): Promise<string | undefined> {
      const meta = await redis.hget(key.delivery(id, did), 'meta');
      return meta === null ? undefined : deliveryMeta.parse(JSON.parse(meta)).body;
    },

    /** Adds an attempt and sets the state, in one script (attempts of one delivery may overlap after a send-again). */
    async recordAttempt(id: string, did: string, attempt: DeliveryAttempt, state: DeliveryRow['state']): Promise<void> {
      await redis.eval(RECORD_SCRIPT, 1, key.delivery(id, did), JSON.stringify(attempt), state);
    },

    /** Starts a new round of attempts: false when one is still pending (or the delivery is gone). */
    async startRound(id: string, did: string): Promise<boolean> {
      return (await redis.eval(ROUND_SCRIPT, 1, key.delivery(id, did))) === 1;
    },

    readDelivery,

    async listDeliveries(id: string): Promise<DeliveryRow[]> {
      // Past their lifetime the records are gone (expired); their ids go from the list here too.
      await redis.zremrangebyscore(key.deliveries(id), '-inf', String(Date.now() - lifetimeMs));
      const dids = await redis.zrevrange(key.deliveries(id), 0, '-1');
      const rows = await Promise.all(dids.map((did) => readDelivery(id, did)));
      return rows.filter((r): r is DeliveryRow => r !== undefined);
    },
  };
}

/** KEYS[1] the delivery hash; ARGV[1] an attempt (JSON), ARGV[2] the new state. The last KEPT_ATTEMPTS attempts are kept; a delivered one stays delivered. */
const RECORD_SCRIPT = `
local meta = redis.call('hget', KEYS[1], 'meta')
if not meta then return 0 end
local m = cjson.decode(meta)
if ARGV[1] ~= '' then
  local attempts = cjson.decode(redis.call('hget', KEYS[1], 'attempts') or '[]')
  attempts[#attempts + 1] = cjson.decode(ARGV[1])
  while #attempts > ${KEPT_ATTEMPTS} do table.remove(attempts, 1) end
  redis.call('hset', KEYS[1], 'attempts', cjson.encode(attempts))
end
if m.state ~= 'delivered' then
  m.state = ARGV[2]
  redis.call('hset', KEYS[1], 'meta', cjson.encode(m))
end
return 1
`;

/** KEYS[1] the webhooks zset, KEYS[2] the new webhook's hash; ARGV: the cap, now, id, row, kept secret. */
const CREATE_SCRIPT = `
if redis.call('zcard', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('hset', KEYS[2], 'row', ARGV[4], 'secret', ARGV[5])
redis.call('zadd', KEYS[1], ARGV[2], ARGV[3])
return 1
`;

/** KEYS[1] the delivery hash: pending again unless it is pending now (a round still running). */
const ROUND_SCRIPT = `
local meta = redis.call('hget', KEYS[1], 'meta')
if not meta then return 0 end
local m = cjson.decode(meta)
if m.state == 'pending' then return 0 end
m.state = 'pending'
redis.call('hset', KEYS[1], 'meta', cjson.encode(m))
return 1
`;

export type WebhookStore = ReturnType<typeof createWebhookStore>;
