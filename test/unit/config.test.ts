import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/env.js';
import { loadConfig, requireDaemonSettings } from '../../src/config/schema.js';
import { loadServeConfig } from '../../src/config/serve.js';

describe('configuration', () => {
  it('has defaults for everything the one-shot run needs', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      REDIS_URL: 'redis://127.0.0.1:6379',
      EXECUTION_QUEUE: 'executions',
      QUEUE_PREFIX: 'bull',
      WORKER_CONCURRENCY: 2,
      MAX_STEPS: 50,
      EXECUTION_TIMEOUT_MS: 900_000,
      S3_FORCE_PATH_STYLE: false,
      S3_PREFIX: '',
      VIEWPORT_WIDTH: 1280,
      VIEWPORT_HEIGHT: 800,
      HEALTH_PORT: 0,
      DOWNLOAD_MAX_BYTES: 104_857_600,
      INPUT_FILE_MAX_BYTES: 104_857_600,
      INPUT_FILE_TIMEOUT_MS: 120_000,
      INPUT_FILE_BUCKETS: [],
    });
    expect(config.API_KEY).toBeUndefined();
  });

  it('parses numbers, booleans and urls, and adds the trailing slash of S3_PREFIX', () => {
    const config = loadConfig({ WORKER_CONCURRENCY: '8', S3_FORCE_PATH_STYLE: 'true', S3_PREFIX: 'prod', API_BASE_URL: 'http://api:8080', HEALTH_PORT: '9090' });
    expect(config).toMatchObject({ WORKER_CONCURRENCY: 8, S3_FORCE_PATH_STYLE: true, S3_PREFIX: 'prod/', API_BASE_URL: 'http://api:8080', HEALTH_PORT: 9090 });
    expect(loadConfig({ INPUT_FILE_BUCKETS: ' inputs, shared-docs ,', DOWNLOAD_MAX_BYTES: '1048576' })).toMatchObject({ INPUT_FILE_BUCKETS: ['inputs', 'shared-docs'], DOWNLOAD_MAX_BYTES: 1_048_576 });
  });

  it('names every bad variable and what was expected', () => {
    let error: unknown;
    try {
      loadConfig({ WORKER_CONCURRENCY: 'many', REDIS_URL: 'http://x', LOG_LEVEL: 'loud', MAX_STEPS: '0' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toMatch(/WORKER_CONCURRENCY="many": must be a whole number/);
    expect(message).toMatch(/REDIS_URL="http:\/\/x": must be a URL starting with redis:\/\//);
    expect(message).toMatch(/^  LOG_LEVEL="loud": must be one of fatal, error, warn, info, debug, trace, silent$/m);
    expect(message).toMatch(/MAX_STEPS="0": must be at least 1/);
  });

  it('never repeats the credentials of a malformed URL in its message', () => {
    const message = (env: Record<string, string>): string => {
      try {
        loadConfig(env);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      throw new Error(`${JSON.stringify(Object.keys(env))} was accepted`);
    };
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ REDIS_URL: 'redis://queue-user:hunter2-pw@redis-host:port' }, /REDIS_URL="redis:\/\/\*\*\*@redis-host:port": must be a valid redis:\/\//],
      [{ REDIS_URL: 'redis://queue-user:hunter2@pw@redis host' }, /REDIS_URL="redis:\/\/\*\*\*@redis host"/],
      [{ REDIS_URL: 'queue-user:hunter2-pw@redis-host:6379' }, /REDIS_URL="\*\*\*@redis-host:6379": must be a URL starting with redis:\/\//],
      [{ REDIS_URL: 'redis+sentinel://u:hunter2-pw@s1:26379,/primary?sentinelPassword=sentinel-hunter2' }, /REDIS_URL="redis\+sentinel:\/\/\*\*\*@s1:26379,\/primary\?sentinelPassword=\*\*\*": a redis\+sentinel/],
      [{ S3_ENDPOINT: 'ftp://AKIAKEY:hunter2-pw@minio:9000' }, /S3_ENDPOINT="ftp:\/\/\*\*\*@minio:9000": must be a URL starting with http:\/\//],
      [{ API_BASE_URL: 'https://api.test:x/?token=hunter2-pw' }, /API_BASE_URL="https:\/\/api.test:x\/\?token=\*\*\*"/],
    ];
    for (const [env, expected] of cases) {
      const text = message(env);
      expect(text).toMatch(expected);
      expect(text).not.toMatch(/hunter2|AKIAKEY|queue-user/);
    }
  });

  it('requires the API settings for the daemon only', () => {
    expect(() => requireDaemonSettings(loadConfig({}))).toThrow(/API_BASE_URL: is required[\s\S]*API_KEY: is required/);
    expect(() => requireDaemonSettings(loadConfig({ API_BASE_URL: 'http://a', API_KEY: 'k' }))).not.toThrow();
  });

  it('takes webhook receivers on private networks only when WEBHOOK_ALLOW_PRIVATE_NETWORKS is true', () => {
    expect(loadServeConfig({ API_KEYS: 'k' }).WEBHOOK_ALLOW_PRIVATE_NETWORKS).toBe(false);
    expect(loadServeConfig({ API_KEYS: 'k', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }).WEBHOOK_ALLOW_PRIVATE_NETWORKS).toBe(true);
    expect(() => loadServeConfig({ API_KEYS: 'k', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'maybe' })).toThrow(/WEBHOOK_ALLOW_PRIVATE_NETWORKS/);
  });
});
