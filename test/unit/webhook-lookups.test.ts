import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { sendOnce } from '../../src/local-service/webhooks/send.js';
import { createTargetPolicy } from '../../src/local-service/webhooks/target-policy.js';

/**
 * An attempt's name lookup (docs/api.md#webhooks): it counts in the attempt's time limit whatever
 * the resolver does, lookups in flight are bounded (a slot is held until the lookup itself ends),
 * and a connection failure is recorded coarsely, never as the errno.
 */

/** A resolver that answers only when told: a stalled system resolver. */
function stalledResolver() {
  const calls: { host: string; answer: (addresses: string[]) => void }[] = [];
  const resolve = (host: string) => new Promise<string[]>((answer) => calls.push({ host, answer }));
  return { calls, resolve, release: () => calls.forEach((c) => c.answer(['127.0.0.1'])) };
}

const message = { id: 'msg_lookup', body: '{}' };
const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

describe('webhook lookups', () => {
  it('fails an attempt at its time limit when the lookup never answers', async () => {
    const stalled = stalledResolver();
    const policy = createTargetPolicy({ resolve: stalled.resolve });
    const attempt = await sendOnce('http://stalled.test/hook', secret, message, { policy, timeoutMs: 300, maxAnswerBytes: 1024 });
    expect(attempt).toMatchObject({ status: null, error: 'timed out (300 ms)' });
    expect(stalled.calls.map((c) => c.host)).toEqual(['stalled.test']);
    // The thread stays held until the lookup itself ends: so does its slot.
    expect(policy.lookupsRunning).toBe(1);
    stalled.release();
    await expect.poll(() => policy.lookupsRunning).toBe(0);
  }, 30_000);

  it('runs at most the bound of lookups at once; the attempts past it wait for a slot and time out', async () => {
    const stalled = stalledResolver();
    const policy = createTargetPolicy({ resolve: stalled.resolve, maxConcurrentLookups: 2 });
    const attempts = await Promise.all(Array.from({ length: 6 }, (_, i) => sendOnce(`http://n${i}.test/hook`, secret, message, { policy, timeoutMs: 300, maxAnswerBytes: 1024 })));
    for (const attempt of attempts) expect(attempt).toMatchObject({ status: null, error: 'timed out (300 ms)' });
    expect(stalled.calls).toHaveLength(2);
    stalled.release();
    await expect.poll(() => policy.lookupsRunning).toBe(0);
    // Free slots serve the next lookups.
    const next = stalledResolver();
    const again = createTargetPolicy({ resolve: next.resolve, maxConcurrentLookups: 1 });
    const pending = again.check({ url: new URL('http://a.test/'), host: 'a.test', port: 80 }, AbortSignal.timeout(30_000));
    await expect.poll(() => next.calls.length).toBe(1);
    next.release();
    expect(await pending).toEqual({ ok: true, address: '127.0.0.1' });
  }, 30_000);

  it('records a failed connection as "connection failed", not its errno', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const attempt = await sendOnce(`http://127.0.0.1:${port}/hook`, secret, message, { policy: createTargetPolicy(), timeoutMs: 10_000, maxAnswerBytes: 1024 });
    expect(attempt).toMatchObject({ status: null, error: 'connection failed' });
  }, 30_000);
});
