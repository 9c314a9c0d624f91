import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { startHealthServer, type HealthServer } from '../../src/telemetry/health.js';

/** The daemon's probes (docs/operations.md#health-and-metrics), on a real HTTP port. */

let server: HealthServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('health server', () => {
  it('answers /healthz 200 while the process is up, even when it is not ready; /readyz says why not', async () => {
    server = await startHealthServer({
      port: 0,
      host: '127.0.0.1',
      registry: new Registry(),
      checks: [
        { name: 'redis', check: async () => undefined },
        { name: 'browser', check: async () => Promise.reject(new Error('no browser')) },
      ],
    });
    const base = `http://127.0.0.1:${server.port}`;
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ ok: false, checks: { redis: 'ok', browser: expect.stringContaining('no browser') } });
    expect((await fetch(`${base}/elsewhere`)).status).toBe(404);
    expect((await fetch(`${base}/healthz`, { method: 'POST' })).status).toBe(405);
  });
});
