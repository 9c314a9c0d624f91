import type http from 'node:http';
import { Redis } from 'ioredis';
import { redisOptions } from '../domain/redis-address.js';
import { LIVE_HEARTBEAT_MS, liveChannelNames, parseLiveMessage } from '../domain/live-protocol.js';
import type { Logger } from '../telemetry/types.js';
import type { WatchNotice } from '../contract/live.js';

/**
 * The local service's side of the live view (protocol: src/domain/live-protocol.ts). Each viewer
 * of a running execution gets one server-sent-events stream carrying its frames (`frame`, base64
 * JPEG), its logs.jsonl lines (`events`) and the end of the run (`end`).
 *
 * While an execution has viewers the hub is subscribed to its channels and tells the workers so
 * (a notice on each new viewer, then every LIVE_HEARTBEAT_MS); when its last viewer leaves the
 * hub unsubscribes, and the worker, whose next publish reaches nobody, stops at once.
 *
 * Memory is bounded per viewer: while a viewer's connection is busy, only the newest frame waits
 * (older ones are dropped) and event lines queue up to a cap, past which the stream is closed
 * (the browser reconnects and gets everything again).
 */

export interface LiveHub {
  /** Streams one execution to `res` until the client goes away or the run ends. */
  serve(executionId: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void>;
  close(): Promise<void>;
}

/** Event messages a busy viewer may have waiting before its stream is closed. */
const MAX_QUEUED_MESSAGES = 500;

interface Viewer {
  res: http.ServerResponse;
  busy: boolean;
  queued: string[];
  frame: string | undefined;
  /** The run is over: the stream ends once what is queued has been written. */
  ending: boolean;
}

export function createLiveHub(opts: { redisUrl: string; queuePrefix: string; queueName: string; logger: Logger }): LiveHub {
  const names = liveChannelNames(opts.queuePrefix, opts.queueName);
  const log = opts.logger.child({ component: 'live' });
  const viewers = new Map<string, Set<Viewer>>();
  const byChannel = new Map<string, { executionId: string; kind: 'frames' | 'events' }>();
  let connections: { sub: Redis; pub: Redis } | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let closed = false;

  const connect = () => {
    if (connections) return connections;
    const sub = new Redis(redisOptions(opts.redisUrl, { maxRetriesPerRequest: 3 }));
    const pub = new Redis(redisOptions(opts.redisUrl, { maxRetriesPerRequest: 3 }));
    for (const c of [sub, pub]) c.on('error', (error: Error) => log.warn({ err: error.message }, 'live view: redis connection error'));
    sub.on('messageBuffer', (channel: Buffer, message: Buffer) => deliver(channel.toString(), message));
    connections = { sub, pub };
    return connections;
  };

  const notify = (executionId: string, join: boolean) => {
    const notice: WatchNotice = { executionId, join };
    connect()
      .pub.publish(names.watch, JSON.stringify(notice))
      .catch((error: Error) => log.warn({ executionId, err: error.message }, 'live view: watch notice not sent'));
  };

  const write = (viewer: Viewer, text: string): void => {
    if (viewer.res.destroyed) return;
    if (!viewer.res.write(text)) {
      viewer.busy = true;
      viewer.res.once('drain', () => flush(viewer));
    }
  };

  const flush = (viewer: Viewer): void => {
    viewer.busy = false;
    while (!viewer.busy && viewer.queued.length > 0) write(viewer, viewer.queued.shift()!);
    if (viewer.busy) return;
    if (viewer.ending) {
      viewer.res.end();
      return;
    }
    if (viewer.frame !== undefined) {
      const frame = viewer.frame;
      viewer.frame = undefined;
      write(viewer, frame);
    }
  };

  const finish = (viewer: Viewer): void => {
    viewer.ending = true;
    viewer.frame = undefined;
    if (!viewer.busy) viewer.res.end();
  };

  const send = (viewer: Viewer, text: string, kind: 'frame' | 'message'): void => {
    if (viewer.ending) return;
    if (!viewer.busy) return write(viewer, text);
    if (kind === 'frame') {
      viewer.frame = text;
      return;
    }
    viewer.queued.push(text);
    if (viewer.queued.length > MAX_QUEUED_MESSAGES) viewer.res.end();
  };

  function deliver(channel: string, message: Buffer): void {
    const target = byChannel.get(channel);
    const audience = target && viewers.get(target.executionId);
    if (!target || !audience) return;
    if (target.kind === 'frames') {
      const text = `event: frame\ndata: ${message.toString('base64')}\n\n`;
      for (const viewer of audience) send(viewer, text, 'frame');
      return;
    }
    // A message of another shape (another version of the worker) is nothing to show.
    const parsed = parseLiveMessage(message.toString('utf8'));
    if (!parsed) return;
    if (parsed.kind === 'events') {
      const text = `event: events\ndata: ${JSON.stringify(parsed.events)}\n\n`;
      for (const viewer of audience) send(viewer, text, 'message');
    } else {
      for (const viewer of audience) {
        send(viewer, 'event: end\ndata: {}\n\n', 'message');
        finish(viewer);
      }
    }
  }

  const startHeartbeat = () => {
    heartbeat ??= setInterval(() => {
      for (const executionId of viewers.keys()) notify(executionId, false);
    }, LIVE_HEARTBEAT_MS);
    heartbeat.unref();
  };

  const leave = async (executionId: string, viewer: Viewer) => {
    const audience = viewers.get(executionId);
    if (!audience?.delete(viewer) || audience.size > 0) return;
    viewers.delete(executionId);
    const channels = [names.frames(executionId), names.events(executionId)];
    for (const c of channels) byChannel.delete(c);
    if (viewers.size === 0 && heartbeat) {
      clearInterval(heartbeat);
      heartbeat = undefined;
    }
    // A channel left subscribed only brings messages nobody reads (byChannel forgot it): logged, not thrown.
    await connections?.sub.unsubscribe(...channels).catch((error: Error) => log.warn({ executionId, err: error.message }, 'live view: could not unsubscribe'));
  };

  return {
    async serve(executionId, req, res) {
      if (closed) throw new Error('the live view is closed');
      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-store',
        'X-Content-Type-Options': 'nosniff',
        // Proxies must pass events through as they come.
        'X-Accel-Buffering': 'no',
      });
      res.write('retry: 3000\n\n');
      const viewer: Viewer = { res, busy: false, queued: [], frame: undefined, ending: false };
      const first = !viewers.has(executionId);
      const audience = viewers.get(executionId) ?? new Set<Viewer>();
      audience.add(viewer);
      viewers.set(executionId, audience);
      res.once('close', () => void leave(executionId, viewer));
      if (first) {
        byChannel.set(names.frames(executionId), { executionId, kind: 'frames' });
        byChannel.set(names.events(executionId), { executionId, kind: 'events' });
        // Subscribed before the notice: what the worker sends in answer is not missed.
        await connect().sub.subscribe(names.frames(executionId), names.events(executionId));
      }
      startHeartbeat();
      notify(executionId, true);
      log.debug({ executionId, viewers: audience.size }, 'live viewer joined');
    },

    async close() {
      closed = true;
      if (heartbeat) clearInterval(heartbeat);
      for (const audience of viewers.values()) for (const viewer of audience) viewer.res.end();
      viewers.clear();
      const open = connections;
      connections = undefined;
      if (open) await Promise.allSettled([open.sub.quit().catch(() => open.sub.disconnect()), open.pub.quit().catch(() => open.pub.disconnect())]);
    },
  };
}
