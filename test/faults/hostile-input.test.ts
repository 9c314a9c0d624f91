import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stopAllDaemons } from '../support/daemon-process.js';
import { hostileBodies } from '../support/hostile-schemas.js';
import { finish } from '../support/scripted-model-server.js';
import { freePort, httpGet, onlyFinal, pollUntil, startRig, type FaultRig } from './harness.js';

/**
 * Jobs whose payload schema and input make validation cost far more than their size
 * (docs/secrets.md#bounds), on a worker process: its `/healthz` answers within 1 s throughout,
 * each job fails `invalid_input` with the reason, and the worker goes on to run a good job.
 */

let rig: FaultRig;

beforeAll(async () => {
  rig = await startRig('hostile', { good: () => finish('completed', { good: true }) });
});
afterEach(stopAllDaemons);
afterAll(async () => rig?.close());

describe('hostile payload schemas on the worker', () => {
  it('keep its loop answering, fail with the reason, and the next job runs', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const worker = await rig.startWorker('hostile', `${rig.tmp}/work`, { HEALTH_PORT: String(port), WORKER_CONCURRENCY: '4', VIDEO_ENABLED: 'false' });
    await pollUntil('/healthz to answer', async () => ((await httpGet(`${base}/healthz`)).status === 200 ? true : undefined));

    // A megabyte of job data each (the deepest one is kept to what JSON.stringify can write).
    const cases = hostileBodies(1_048_576).filter((c) => !c.name.startsWith('nested'));
    const ids = await Promise.all(cases.map((c) => rig.enqueue('hostile', { specification: rig.spec('hostile', { payloadSchema: c.schema }), inputPayload: JSON.parse(c.payloadText) as unknown })));
    const finals = Promise.all(ids.map((id) => rig.api.waitForFinal(id)));
    let done = false;
    void finals.then(() => (done = true));
    const slowest: number[] = [];
    while (!done) {
      const sentAt = performance.now();
      expect((await httpGet(`${base}/healthz`)).status).toBe(200);
      slowest.push(performance.now() - sentAt);
    }
    await finals;
    expect(Math.max(...slowest), `each /healthz took ${slowest.map(Math.round).join(', ')} ms`).toBeLessThan(1000);
    cases.forEach((c, i) => {
      const final = onlyFinal(rig.api, ids[i]!);
      expect(final.kind, c.name).toBe('failed');
      expect(final.body, c.name).toMatchObject({ error: { code: 'invalid_input' } });
      expect(JSON.stringify(final.body), c.name).toMatch(c.expected);
    });

    const good = await rig.enqueue('good');
    expect((await rig.api.waitForFinal(good)).path).toMatch(/\/completed$/);
    expect(worker.alive).toBe(true);
  });
});
