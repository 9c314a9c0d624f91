import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserSandbox, Screencast } from '../../src/browser/types.js';
import { createBrowser, createRunnerDeps } from '../../src/compose.js';
import { loadConfig } from '../../src/config/schema.js';
import { liveChannelNames } from '../../src/domain/live-protocol.js';
import { createRedisLiveRelay } from '../../src/live/redis-live-relay.js';
import { runExecution } from '../../src/runner/run-execution.js';
import { createLocalStore } from '../../src/storage/local-store.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { API_KEY, startHarness, type Harness } from '../contract/local-api-harness.js';
import { deferred } from '../support/deferred.js';
import { hostRules, tempDir } from '../support/env.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { computer, finish, startScriptedModelServer } from '../support/scripted-model-server.js';
import { startShopServer, type ShopServer } from '../support/shop-server.js';
import type { LiveMessage, WatchNotice } from '../../src/contract/live.js';
import { execution } from '../../src/contract/executions.js';
import { workflow as workflowAnswer } from '../../src/contract/workflows.js';

/**
 * The live view's two halves on real Redis. The worker's relay with video off: no screencast and
 * nothing published until someone watches, a screencast of its own while watched, stopped when
 * the viewer leaves. The local service's hub: a viewer that does not read loses frames, never
 * log lines, and the publisher never waits for it.
 */

let redis: TestRedis;
let shop: ShopServer;
let dir: string;
const logger = createSilentLogger();

beforeAll(async () => {
  [redis, shop, dir] = await Promise.all([startRedis(), startShopServer(), tempDir('live-view')]);
});

afterAll(async () => {
  await Promise.allSettled([shop?.close(), redis?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Records when the session's screencasts start and stop. */
function countingScreencasts(inner: BrowserSandbox, log: string[]): BrowserSandbox {
  return {
    ...inner,
    async openSession(options, signal) {
      const session = await inner.openSession(options, signal);
      return Object.assign(Object.create(session) as typeof session, {
        async startScreencast(...args: Parameters<typeof session.startScreencast>): Promise<Screencast> {
          log.push('start');
          const cast = await session.startScreencast(...args);
          return {
            async stop() {
              log.push('stop');
              await cast.stop();
            },
          };
        },
      });
    },
  };
}

/** The next message on `channel` of a subscriber connection. */
function nextMessage(sub: Redis, channel: string): Promise<Buffer> {
  return new Promise((resolve) => {
    const on = (ch: Buffer, message: Buffer) => {
      if (ch.toString() !== channel) return;
      sub.off('messageBuffer', on);
      resolve(message);
    };
    sub.on('messageBuffer', on);
  });
}

describe('live view', () => {
  it('with video off, screencasts only while someone watches and publishes nothing before', async () => {
    const queueName = `live-${randomUUID().slice(0, 8)}`;
    const names = liveChannelNames('bull', queueName);
    const relay = createRedisLiveRelay({ redisUrl: redis.url, queuePrefix: 'bull', queueName, logger });
    const gates = [deferred(), deferred()];
    const model = await startScriptedModelServer([
      { ...computer('left_click', { coordinate: [250, 120] }), until: gates[0]!.promise },
      { ...finish('completed', { ok: true }), until: gates[1]!.promise },
    ]);
    const config = loadConfig({ BROWSER_HOST_RULES: hostRules('shop.test'), WORK_DIR: path.join(dir, 'work'), ANTHROPIC_API_KEY: 'anthropic-key-for-tests', ANTHROPIC_BASE_URL: model.url, VIDEO_ENABLED: 'false', LOG_LEVEL: 'silent' });
    const screencasts: string[] = [];
    const browser = countingScreencasts(createBrowser(config, logger), screencasts);
    const spy = new Redis(redis.url);
    const viewer = new Redis(redis.url);
    const notices = new Redis(redis.url);
    const published: string[] = [];
    spy.on('pmessage', (_p: string, channel: string) => published.push(channel));
    await spy.psubscribe(`bull:${queueName}:live:*`);
    try {
      const deps = createRunnerDeps({ config, logger, browser, store: createLocalStore({ dir: path.join(dir, 'artifacts'), prefix: '' }), live: relay });
      const executionId = randomUUID();
      const run = runExecution(deps, { executionId, inputPayload: null, specification: { prompt: 'p', allowedDomains: [new URL(shop.origin).host], startUrl: `${shop.origin}/` } }, new AbortController().signal);

      // The model is asked for step 1; nobody watches: no screencast, nothing published.
      await expect.poll(() => model.requests.length, { timeout: 30_000 }).toBe(1);
      expect(screencasts).toEqual([]);
      expect(published).toEqual([]);

      // A viewer arrives: a screencast starts, a frame and the run so far come.
      await viewer.subscribe(names.frames(executionId), names.events(executionId));
      const frame = nextMessage(viewer, names.frames(executionId));
      const backlog = nextMessage(viewer, names.events(executionId));
      const notice: WatchNotice = { executionId, join: true };
      await notices.publish(names.watch, JSON.stringify(notice));
      expect((await frame).subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
      const message = JSON.parse((await backlog).toString()) as LiveMessage;
      expect(message.kind === 'events' && message.events.map((e) => e.line.type)).toEqual(expect.arrayContaining(['execution_started', 'step_screenshot']));
      expect(screencasts).toEqual(['start']);

      // The viewer leaves; the click repaints the page, its frame reaches nobody: the screencast stops.
      await viewer.unsubscribe();
      gates[0]!.resolve();
      await expect.poll(() => screencasts, { timeout: 15_000 }).toEqual(['start', 'stop']);
      gates[1]!.resolve();
      expect((await run).status).toBe('completed');
      expect(screencasts).toEqual(['start', 'stop']);
    } finally {
      for (const g of gates) g.resolve();
      spy.disconnect();
      viewer.disconnect();
      notices.disconnect();
      await relay.close();
      await browser.close();
      await model.stop();
    }
  });

  it('drops frames for a viewer that does not read, never its log lines, and never waits for it', async () => {
    const h: Harness = await startHarness({ redis, network: true });
    const names = liveChannelNames('bull', h.queueName);
    const publisher = new Redis(redis.url);
    const watch = new Redis(redis.url);
    try {
      const workflow = (await h.api.as(workflowAnswer)('POST', '/api/workflows', { prompt: 'p', allowedDomains: ['a.test'] })).body;
      const id = (await h.api.as(execution)('POST', `/api/workflows/${workflow.workflow_uuid}/execute`, {})).body.execution_uuid;
      await watch.subscribe(names.watch);
      const joined = nextMessage(watch, names.watch);

      // A viewer that reads nothing for now.
      const chunks: Buffer[] = [];
      const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
        http.get(`${h.server.url}/live/executions/${id}`, { headers: { 'X-Service-Key': API_KEY } }, resolve).on('error', reject);
      });
      expect(response.statusCode).toBe(200);
      response.pause();
      expect(JSON.parse((await joined).toString())).toEqual({ executionId: id, join: true });

      // 200 frames of 256 KiB (50 MiB) and 50 log lines, published as fast as Redis takes them.
      const frame = Buffer.alloc(256 * 1024, 7);
      frame[0] = 0xff;
      frame[1] = 0xd8;
      for (let i = 0; i < 200; i++) {
        await publisher.publish(names.frames(id), frame);
        if (i % 4 === 0) {
          const lines: LiveMessage = { kind: 'events', events: [{ seq: i / 4 + 1, line: { ts: new Date().toISOString(), t: i, type: 'action', executionId: id, step: i / 4 + 1 } }] };
          await publisher.publish(names.events(id), JSON.stringify(lines));
        }
      }
      const end: LiveMessage = { kind: 'end' };
      await publisher.publish(names.events(id), JSON.stringify(end));

      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.resume();
      await new Promise((resolve) => response.on('end', resolve));
      const text = Buffer.concat(chunks).toString();
      const frames = text.split('event: frame\n').length - 1;
      const seqs = [...text.matchAll(/"seq":(\d+)/g)].map((m) => Number(m[1]));
      expect(seqs).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
      expect(text.endsWith('event: end\ndata: {}\n\n')).toBe(true);
      expect(frames).toBeGreaterThan(0);
      expect(frames).toBeLessThan(200);
    } finally {
      publisher.disconnect();
      watch.disconnect();
      await h.close();
    }
  });
});
