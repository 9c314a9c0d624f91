import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/env.js';
import { loadServeConfig } from '../../src/config/serve.js';

/**
 * `execution-worker serve`'s own settings (docs/configuration.md#the-local-api), parsed with the
 * worker's at start: defaults, and one message naming every bad value, never a key.
 */

const KEYS = { API_KEYS: 'first-key, second-key' };

/** The ConfigError `env` makes, as text. */
function refusal(env: Record<string, string>): string {
  try {
    loadServeConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
}

describe('the serve settings', () => {
  it('listen on 127.0.0.1:8080 when PORT and HOST are unset or blank, and take the keys in order', () => {
    for (const env of [KEYS, { ...KEYS, PORT: '', HOST: '  ' }]) {
      const config = loadServeConfig(env);
      expect(config.PORT).toBe(8080);
      expect(config.HOST).toBe('127.0.0.1');
      expect(config.API_KEYS).toEqual(['first-key', 'second-key']);
      expect(config.PUBLIC_HOSTS).toEqual([]);
      expect(config.TEST_ONLY_SCHEDULE_EVERY_SECOND).toBe(false);
      // The worker's settings come with them.
      expect(config.EXECUTION_QUEUE).toBe('executions');
    }
  });

  it('take a port, an interface and the public names given', () => {
    const config = loadServeConfig({ ...KEYS, PORT: '0', HOST: '0.0.0.0', PUBLIC_HOSTS: 'api, Proxy.Example:8443', TEST_ONLY_SCHEDULE_EVERY_SECOND: 'true' });
    expect(config.PORT).toBe(0);
    expect(config.HOST).toBe('0.0.0.0');
    expect(config.PUBLIC_HOSTS).toEqual([
      { hostname: 'api', port: undefined },
      { hostname: 'proxy.example', port: 8443 },
    ]);
    expect(config.TEST_ONLY_SCHEDULE_EVERY_SECOND).toBe(true);
    expect(loadServeConfig({ ...KEYS, HOST: 'localhost' }).HOST).toBe('localhost');
    expect(loadServeConfig({ ...KEYS, HOST: '::' }).HOST).toBe('::');
  });

  it('refuse every bad value at once, each on its line with what was expected', () => {
    const message = refusal({ PORT: 'http', HOST: 'every interface', PUBLIC_HOSTS: 'api, http://evil.test/, api/x', WORKER_CONCURRENCY: '0' });
    expect(message).toMatch(/^invalid configuration:\n/);
    expect(message).toContain('  PORT="http": must be a whole number from 0 to 65535');
    expect(message).toContain('  HOST="every interface": must be an IP address (0.0.0.0 for every interface) or a host name');
    expect(message).toContain('API_KEYS=(not set): set at least one key (comma-separated) for X-Service-Key');
    expect(message).toContain('"http://evil.test/" is not a host name or a host:port');
    expect(message).toContain('"api/x" is not a host name or a host:port');
    expect(message).toContain('  WORKER_CONCURRENCY="0": must be at least 1');
    expect(refusal({ ...KEYS, PORT: '70000' })).toContain('PORT="70000": must be at most 65535');
  });

  it('never repeat a key in a refusal', () => {
    const message = refusal({ API_KEYS: ' , ', PORT: 'x' });
    expect(message).toContain('API_KEYS=(secret, not shown): set at least one key');
    const withKey = refusal({ API_KEYS: 'sk-serve-secret', PORT: 'x', API_KEY: 'sk-worker-secret', PROFILE_KEYS: 'sk-profile' });
    expect(withKey).not.toMatch(/sk-(serve|worker|profile)/);
  });
});
