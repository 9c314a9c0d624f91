import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { apiKeyRecord, type ApiKeyRecord, type KeyRole } from '../contract/access.js';

/**
 * API keys made in the dashboard (Settings → API Keys, docs/operations.md#api-keys): named, shown
 * once, kept only as a hash, revocable. The keys of `API_KEYS` are the bootstrap: they are not
 * stored here.
 *
 * A key is `ewk_` and 256 random bits (base64url). It is stored as its SHA-256, not a slow
 * password hash: a slow hash guards secrets a person chose, which a thief of the hashes could
 * guess; nobody guesses 256 random bits, fast hash or not. And every request is checked by
 * hashing its key, so a slow hash would make each request cost tens of milliseconds of CPU and
 * hand anyone who can reach the port a cheap way to stall the service.
 *
 * Layout under the store's prefix (`{api}:keys:`):
 *
 *   records    hash  key id → JSON `{ id, name, created_at, role, made_by_tag, created_by, hash, name_key }`
 *   hashes     hash  SHA-256 of the key (hex) → key id
 *   names      hash  the name, lower-cased → key id (names are unique, whatever their case)
 *   used       hash  a credential's tag → ISO time of its last use (bootstrap keys too)
 */

export interface ApiKeyStore {
  /**
   * Stores a new key's record under the key's hash: `added`, or `taken` when the name is, or
   * `maker_gone` when the dashboard key it was made with (its `made_by_tag`) was revoked
   * meanwhile — checked in the same step, so no key outlives its maker's revocation.
   */
  add(record: ApiKeyRecord, keyHash: string): Promise<'added' | 'taken' | 'maker_gone'>;
  /** The record a key hash belongs to, while the key is live. */
  byHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  byId(id: string): Promise<ApiKeyRecord | undefined>;
  list(): Promise<ApiKeyRecord[]>;
  /** Deletes the key: its hash no longer finds it, at once. The record it had, or undefined. */
  remove(id: string): Promise<ApiKeyRecord | undefined>;
  /**
   * Deletes the key and every key made with it, transitively (the key first: from then on its
   * descendants are refused anyway, auth.ts). The records removed, the key's first; empty when
   * there was no such key.
   */
  removeTree(id: string): Promise<ApiKeyRecord[]>;
  /** Records a use of a credential (by its tag), and reads the last ones. */
  markUsed(tag: string, at: string): Promise<void>;
  lastUsed(tags: readonly string[]): Promise<(string | null)[]>;
}

/** The prefix every dashboard-made key starts with: easy to recognise in a leaked file. */
export const KEY_PREFIX = 'ewk_';
/** Names of the `API_KEYS` entries, by position: reserved. */
export const BOOTSTRAP_NAME = /^bootstrap-\d+$/i;

export const bootstrapName = (index: number): string => `bootstrap-${index + 1}`;

export function newApiKey(): string {
  return `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Who made a key: the credential's tag (its chain, auth.ts) and what the listing shows. */
export interface KeyMaker {
  tag: string;
  shown: string;
}

/** A fresh record for `name` (checked by the caller against KEY_NAME and BOOTSTRAP_NAME). */
export function newKeyRecord(name: string, role: KeyRole, maker: KeyMaker, nowMs = Date.now()): ApiKeyRecord {
  return { id: randomUUID(), name, created_at: new Date(nowMs).toISOString(), role, made_by_tag: maker.tag, created_by: maker.shown };
}

/**
 * Adds a record only when its name is free, in one step: two requests making the same name at
 * once cannot both succeed.
 */
const ADD_SCRIPT = `
if ARGV[5] ~= '' and redis.call('hexists', KEYS[1], ARGV[5]) == 0 then return -1 end
if redis.call('hsetnx', KEYS[3], ARGV[2], ARGV[1]) == 0 then return 0 end
redis.call('hset', KEYS[1], ARGV[1], ARGV[4])
redis.call('hset', KEYS[2], ARGV[3], ARGV[1])
return 1
`;

/** Removes a record, its hash and its name in one step: `hashes` forgets the key at once. */
const REMOVE_SCRIPT = `
local raw = redis.call('hget', KEYS[1], ARGV[1])
if not raw then return false end
local stored = cjson.decode(raw)
redis.call('hdel', KEYS[1], ARGV[1])
redis.call('hdel', KEYS[2], stored.hash)
redis.call('hdel', KEYS[3], stored.name_key)
redis.call('hdel', KEYS[4], ARGV[2])
return raw
`;

export function createRedisApiKeyStore(redis: Redis, prefix: string): ApiKeyStore {
  const key = { records: `${prefix}records`, hashes: `${prefix}hashes`, names: `${prefix}names`, used: `${prefix}used` };
  // The stored JSON holds the key's hash too (for removal); the record's schema leaves it out.
  const parse = (raw: string | null): ApiKeyRecord | undefined => (raw === null ? undefined : apiKeyRecord.parse(JSON.parse(raw)));

  return {
    async add(record, keyHash) {
      const makerId = record.made_by_tag === undefined ? '' : (STORED_TAG.exec(record.made_by_tag)?.[1] ?? '');
      const added = await redis.eval(ADD_SCRIPT, 3, key.records, key.hashes, key.names, record.id, nameKey(record.name), keyHash, JSON.stringify({ ...record, hash: keyHash, name_key: nameKey(record.name) }), makerId);
      return added === 1 ? 'added' : added === -1 ? 'maker_gone' : 'taken';
    },
    async byHash(keyHash) {
      const id = await redis.hget(key.hashes, keyHash);
      return id === null ? undefined : parse(await redis.hget(key.records, id));
    },
    async byId(id) {
      return parse(await redis.hget(key.records, id));
    },
    async list() {
      const all = Object.values(await redis.hgetall(key.records)).map((raw) => parse(raw)!);
      return all.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.name.localeCompare(b.name));
    },
    async remove(id) {
      const raw = (await redis.eval(REMOVE_SCRIPT, 4, key.records, key.hashes, key.names, key.used, id, storedKeyTag(id))) as string | null;
      return parse(raw);
    },
    async removeTree(id) {
      const first = await this.remove(id);
      if (!first) return [];
      const removed = [first];
      // Each record once: the list is read once, then walked from the key down.
      const byMaker = new Map<string, ApiKeyRecord[]>();
      for (const record of await this.list()) {
        if (record.made_by_tag === undefined) continue;
        byMaker.set(record.made_by_tag, [...(byMaker.get(record.made_by_tag) ?? []), record]);
      }
      const queue = [storedKeyTag(id)];
      const seen = new Set(queue);
      while (queue.length > 0) {
        for (const child of byMaker.get(queue.shift()!) ?? []) {
          const tag = storedKeyTag(child.id);
          if (seen.has(tag)) continue;
          seen.add(tag);
          const gone = await this.remove(child.id);
          if (gone) removed.push(gone);
          queue.push(tag);
        }
      }
      return removed;
    },
    async markUsed(tag, at) {
      await redis.hset(key.used, tag, at);
    },
    async lastUsed(tags) {
      if (tags.length === 0) return [];
      return redis.hmget(key.used, ...tags);
    },
  };
}

/** Names are unique whatever their case. */
const nameKey = (name: string): string => name.toLowerCase();

/** The tag a dashboard-made key's sessions and links carry: its id, never the key. */
export const storedKeyTag = (id: string): string => `k:${id}`;
/** A dashboard key's id, from its tag. */
export const STORED_TAG = /^k:([0-9a-f-]{36})$/;
