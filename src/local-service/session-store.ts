import type { Redis } from 'ioredis';
import type { SessionStore } from './auth.js';

/**
 * The dashboard's sessions and login links in Redis (auth.ts), one key per record under
 * `prefix`, expiring with the record. `take` is GETDEL, so a login link is redeemed once even
 * when two requests race for it.
 */
export function createRedisSessionStore(redis: Redis, prefix: string): SessionStore {
  return {
    async put(id, value, ttlMs) {
      await redis.set(`${prefix}${id}`, value, 'PX', Math.max(1, Math.ceil(ttlMs)));
    },
    async get(id) {
      return (await redis.get(`${prefix}${id}`)) ?? undefined;
    },
    async take(id) {
      return (await redis.getdel(`${prefix}${id}`)) ?? undefined;
    },
    async delete(id) {
      await redis.del(`${prefix}${id}`);
    },
  };
}
