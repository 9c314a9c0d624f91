import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/schema.js';
import { describeRedisAddress, parseRedisAddress, redisOptions } from '../../src/domain/redis-address.js';

describe('REDIS_URL forms', () => {
  it('reads one Redis from redis:// and rediss://, keeping the client options', () => {
    expect(redisOptions('redis://:pw@cache.internal:6380/2', { lazyConnect: true })).toEqual({ host: 'cache.internal', port: 6380, password: 'pw', db: 2, lazyConnect: true });
    expect(redisOptions('rediss://user:p%40ss@cache')).toEqual({ host: 'cache', port: 6379, username: 'user', password: 'p@ss', tls: {} });
  });

  it('reads Sentinel: several sentinels, the primary name, a database, credentials for each side', () => {
    expect(parseRedisAddress('redis+sentinel://u:secret@s1:26380,s2,[::1]:26381/mymaster/3?sentinelPassword=sp')).toEqual({
      kind: 'sentinel',
      tls: false,
      sentinels: [
        { host: 's1', port: 26380 },
        { host: 's2', port: 26379 },
        { host: '::1', port: 26381 },
      ],
      name: 'mymaster',
      db: 3,
      username: 'u',
      password: 'secret',
      sentinelPassword: 'sp',
    });
    expect(redisOptions('redis+sentinel://s1/mymaster', { maxRetriesPerRequest: null })).toMatchObject({ sentinels: [{ host: 's1', port: 26379 }], name: 'mymaster', db: 0, failoverDetector: true, maxRetriesPerRequest: null });
  });

  it('reads Sentinel over TLS: TLS to the sentinels and to the primary they name', () => {
    expect(parseRedisAddress('rediss+sentinel://s1:26380,s2/mymaster')).toMatchObject({ kind: 'sentinel', tls: true, name: 'mymaster', sentinels: [{ host: 's1', port: 26380 }, { host: 's2', port: 26379 }] });
    expect(redisOptions('rediss+sentinel://u:pw@s1/mymaster/2', { lazyConnect: true })).toEqual({
      sentinels: [{ host: 's1', port: 26379 }],
      name: 'mymaster',
      db: 2,
      username: 'u',
      password: 'pw',
      sentinelUsername: undefined,
      sentinelPassword: undefined,
      failoverDetector: true,
      sentinelTLS: {},
      tls: {},
      enableTLSForSentinelMode: true,
      lazyConnect: true,
    });
    expect(redisOptions('redis+sentinel://s1/mymaster')).not.toHaveProperty('tls');
    expect(describeRedisAddress('rediss+sentinel://u:secret@s1/m')).toBe('rediss+sentinel://u:***@s1:26379/m/0');
    expect(loadConfig({ REDIS_URL: 'rediss+sentinel://a:26379/mymaster' }).REDIS_URL).toBe('rediss+sentinel://a:26379/mymaster');
    expect(() => parseRedisAddress('rediss+cluster://n1:7000')).toThrow(/Redis Cluster is not supported/);
  });

  it('hides passwords when the address is logged', () => {
    expect(describeRedisAddress('redis+sentinel://u:secret@s1:26380,s2/mymaster?sentinelPassword=sp')).toBe('redis+sentinel://u:***@s1:26380,s2:26379/mymaster/0');
    expect(describeRedisAddress('redis://:secret@h:1/0')).not.toContain('secret');
  });

  it('refuses malformed Sentinel addresses with what to write instead', () => {
    expect(() => parseRedisAddress('redis+sentinel://s1:26379')).toThrow(/names its primary/);
    expect(() => parseRedisAddress('redis+sentinel://s1:99999/m')).toThrow(/host:port/);
    expect(() => parseRedisAddress('redis+sentinel://s1,,s2/m')).toThrow(/host:port/);
    expect(() => parseRedisAddress('redis+sentinel://s1/m/x')).toThrow(/database number/);
    expect(() => parseRedisAddress('redis+sentinel://s1/m?role=slave')).toThrow(/unknown redis\+sentinel:\/\/ parameter "role"/);
  });

  it('refuses Redis Cluster in the configuration, saying it is not supported and what to use', () => {
    expect(() => loadConfig({ REDIS_URL: 'redis+cluster://n1:7000,n2:7000' })).toThrow(/REDIS_URL=.*Redis Cluster is not supported.*redis\+sentinel:\/\//);
    expect(() => loadConfig({ REDIS_URL: 'http://x' })).toThrow(/must be a URL starting with redis:\/\//);
    expect(loadConfig({ REDIS_URL: 'redis+sentinel://a:26379,b:26379/mymaster' }).REDIS_URL).toBe('redis+sentinel://a:26379,b:26379/mymaster');
  });
});
