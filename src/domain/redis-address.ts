import type { RedisOptions } from 'ioredis';

/**
 * The forms `REDIS_URL` takes (docs/configuration.md#redis) and the ioredis options each one
 * means. Every Redis client of the worker and the local service is built from here, so a
 * Sentinel address works for all of them (the queue, the run cache, the live relay...).
 *
 * - `redis://[user:password@]host[:port][/db]` and `rediss://…` (TLS): one Redis.
 * - `redis+sentinel://[user:password@]host[:port][,host[:port]…]/primary-name[/db]`
 *   `[?sentinelPassword=…&sentinelUsername=…]`: Redis Sentinel; the credentials are the
 *   primary's, the sentinels' go in the query. Sentinels default to port 26379.
 * - `rediss+sentinel://…`: the same over TLS, to the sentinels and to the primary (and its
 *   replicas after a fail-over). Certificates are checked against Node's CAs, to which
 *   `NODE_EXTRA_CA_CERTS` adds a private one.
 * - `redis+cluster://…`: refused. Redis Cluster is not supported (docs/operations.md#redis).
 *
 * Written by hand: WHATWG URLs cannot hold a comma-separated host list, and ioredis reads no
 * Sentinel URL form of its own.
 */

export type RedisAddress =
  | { kind: 'single'; url: string }
  | {
      kind: 'sentinel';
      /** `rediss+sentinel://`: TLS to the sentinels and to the primary. */
      tls: boolean;
      sentinels: Array<{ host: string; port: number }>;
      name: string;
      db: number;
      username?: string;
      password?: string;
      sentinelUsername?: string;
      sentinelPassword?: string;
    };

const SENTINEL_PORT = 26_379;
export const CLUSTER_REFUSAL =
  'Redis Cluster is not supported: the queue keys of one execution span several hash slots. Use one Redis, or Redis Sentinel for fail-over (redis+sentinel://host:26379,host2:26379/primary-name, or rediss+sentinel:// over TLS); see docs/operations.md#redis';

/** Parses `REDIS_URL`; throws an Error whose message says what is wrong. */
export function parseRedisAddress(raw: string): RedisAddress {
  const value = raw.trim();
  const scheme = /^([a-z+]+):\/\//i.exec(value)?.[1]?.toLowerCase();
  if (scheme === 'redis' || scheme === 'rediss') {
    try {
      new URL(value);
    } catch {
      throw new Error('must be a valid redis:// or rediss:// URL');
    }
    return { kind: 'single', url: value };
  }
  if (scheme === 'redis+cluster' || scheme === 'rediss+cluster') throw new Error(CLUSTER_REFUSAL);
  if (scheme !== 'redis+sentinel' && scheme !== 'rediss+sentinel') {
    throw new Error('must be a URL starting with redis://, rediss://, redis+sentinel:// or rediss+sentinel:// (docs/configuration.md#redis)');
  }

  const tls = scheme === 'rediss+sentinel';
  const rest = value.slice(`${scheme}://`.length);
  const [beforeQuery = '', query = ''] = splitOnce(rest, '?');
  const slash = beforeQuery.indexOf('/');
  if (slash < 0) throw new Error('a redis+sentinel:// URL names its primary after the hosts: redis+sentinel://host:26379/primary-name');
  const authority = beforeQuery.slice(0, slash);
  const path = beforeQuery.slice(slash + 1).split('/').filter(Boolean);
  const at = authority.lastIndexOf('@');
  const userInfo = at >= 0 ? authority.slice(0, at) : '';
  const hostList = at >= 0 ? authority.slice(at + 1) : authority;

  const sentinels = hostList.split(',').map((entry) => parseHostPort(entry.trim()));
  if (sentinels.length === 0 || sentinels.some((s) => !s)) throw new Error('a redis+sentinel:// URL lists its sentinels as host:port, separated by commas');
  const name = path[0] ? decodeURIComponent(path[0]) : '';
  if (!name) throw new Error('a redis+sentinel:// URL names its primary after the hosts: redis+sentinel://host:26379/primary-name');
  const db = path[1] === undefined ? 0 : Number(path[1]);
  if (!Number.isInteger(db) || db < 0 || path.length > 2) throw new Error('after the primary name, a redis+sentinel:// URL may give only a database number: …/primary-name/0');

  const [user = '', password] = userInfo ? splitOnce(userInfo, ':') : [];
  const params = new URLSearchParams(query);
  for (const key of params.keys()) {
    if (key !== 'sentinelPassword' && key !== 'sentinelUsername') throw new Error(`unknown redis+sentinel:// parameter "${key}" (known: sentinelPassword, sentinelUsername)`);
  }
  return {
    kind: 'sentinel',
    tls,
    sentinels: sentinels as Array<{ host: string; port: number }>,
    name,
    db,
    ...(user ? { username: decodeURIComponent(user) } : {}),
    ...(password !== undefined && password !== '' ? { password: decodeURIComponent(password) } : {}),
    ...(params.get('sentinelUsername') ? { sentinelUsername: params.get('sentinelUsername')! } : {}),
    ...(params.get('sentinelPassword') ? { sentinelPassword: params.get('sentinelPassword')! } : {}),
  };
}

/** The ioredis options for `REDIS_URL`, merged with a client's own (`new Redis(redisOptions(url, {...}))`). */
export function redisOptions(raw: string, own: RedisOptions = {}): RedisOptions {
  const address = parseRedisAddress(raw);
  if (address.kind === 'single') return { ...singleOptions(address.url), ...own };
  const { sentinels, name, db, username, password, sentinelUsername, sentinelPassword } = address;
  return {
    sentinels,
    name,
    db,
    username,
    password,
    sentinelUsername,
    sentinelPassword,
    // Sentinel announces a fail-over on +switch-master: reconnect to the new primary at once
    // instead of waiting for the old one's connection to break.
    failoverDetector: true,
    // ioredis speaks TLS to the sentinels with `sentinelTLS` (the fail-over watch included), and
    // to the primary they name with `tls` only when `enableTLSForSentinelMode` says so.
    ...(address.tls ? { sentinelTLS: {}, tls: {}, enableTLSForSentinelMode: true } : {}),
    ...own,
  };
}

/** `REDIS_URL` for logs: passwords replaced. */
export function describeRedisAddress(raw: string): string {
  try {
    const address = parseRedisAddress(raw);
    if (address.kind === 'single') {
      const u = new URL(address.url);
      if (u.password) u.password = '***';
      return u.toString();
    }
    const hosts = address.sentinels.map((s) => `${s.host}:${s.port}`).join(',');
    return `${address.tls ? 'rediss' : 'redis'}+sentinel://${address.password ? `${address.username ?? ''}:***@` : ''}${hosts}/${address.name}/${address.db}`;
  } catch {
    return '(unparseable url)';
  }
}

function singleOptions(url: string): RedisOptions {
  const u = new URL(url);
  const db = u.pathname.replace(/^\//, '');
  return {
    host: u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(db ? { db: Number(db) } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}

function parseHostPort(entry: string): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(entry);
  if (!match) return undefined;
  const port = match[2] ? Number(match[2]) : SENTINEL_PORT;
  if (port < 1 || port > 65_535) return undefined;
  return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const index = text.indexOf(separator);
  return index < 0 ? [text, undefined] : [text.slice(0, index), text.slice(index + separator.length)];
}
