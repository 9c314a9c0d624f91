import { Redis } from 'ioredis';
import { redisOptions } from '../domain/redis-address.js';
import { LIVE_WATCH_TTL_MS, liveChannelNames, parseWatchNotice } from '../domain/live-protocol.js';
import type { Logger } from '../telemetry/types.js';
import type { LiveChannel, LiveFrame, LiveRelay } from './types.js';
import type { LiveEvent, LiveMessage } from '../contract/live.js';

/**
 * The worker's side of the live view, over Redis pub/sub (protocol: src/domain/live-protocol.ts).
 *
 * One subscriber connection per worker process listens for watch notices; a notice for an
 * execution this process runs makes its channel "watched" for LIVE_WATCH_TTL_MS, renewed by each
 * heartbeat. Only then are frames and events published, on a second connection, fire-and-forget:
 * at most one frame of an execution is in flight, and a frame that arrives meanwhile replaces the
 * one waiting, so a slow Redis or a slow viewer costs dropped frames, never a wait or a buffer.
 * A publish that reaches no subscriber (every viewer left) ends the watch at once.
 *
 * The publishing connection has no offline queue: while Redis is away, frames and events are
 * dropped rather than piled up in memory.
 */

export interface RedisLiveRelayOptions {
  redisUrl: string;
  queuePrefix: string;
  queueName: string;
  logger: Logger;
  /** Least time between two frames of one execution. Default 250 ms: 4 frames per second. */
  frameIntervalMs?: number;
  /** Events kept per execution for viewers who arrive later. Default 2000 (the newest). */
  backlogEvents?: number;
}

export function createRedisLiveRelay(opts: RedisLiveRelayOptions): LiveRelay {
  const names = liveChannelNames(opts.queuePrefix, opts.queueName);
  const log = opts.logger.child({ component: 'live' });
  const frameIntervalMs = opts.frameIntervalMs ?? 250;
  const backlogEvents = opts.backlogEvents ?? 2_000;
  const channels = new Map<string, ReturnType<typeof createChannel>>();

  let warned = false;
  const onRedisError = (error: Error) => {
    // Live view is a convenience: say it once, never fail a run for it.
    if (!warned) log.warn({ err: error.message }, 'live view: redis connection error');
    warned = true;
  };
  const pub = new Redis(redisOptions(opts.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 }));
  pub.on('error', onRedisError);
  pub.on('ready', () => (warned = false));
  const sub = new Redis(redisOptions(opts.redisUrl, { maxRetriesPerRequest: null }));
  sub.on('error', onRedisError);
  sub.on('message', (channel: string, text: string) => {
    if (channel !== names.watch) return;
    const notice = parseWatchNotice(text);
    if (notice) channels.get(notice.executionId)?.noticed(notice.join);
  });
  sub.subscribe(names.watch).catch((error: Error) => log.warn({ err: error.message }, 'live view unavailable: could not subscribe to watch notices'));

  const publish = (channel: string, message: string | Buffer): Promise<number> => pub.publish(channel, message);

  function createChannel(executionId: string) {
    const framesChannel = names.frames(executionId);
    const eventsChannel = names.events(executionId);
    const listeners: Array<(watched: boolean) => void> = [];
    const backlog: LiveEvent[] = [];
    let seq = 0;
    let watched = false;
    let closed = false;
    let watchTimer: NodeJS.Timeout | undefined;
    let latest: LiveFrame | undefined;
    let pending: LiveFrame | undefined;
    let inFlight = false;
    let lastSentAt = 0;
    let sendTimer: NodeJS.Timeout | undefined;

    const setWatched = (next: boolean) => {
      if (watched === next || (next && closed)) return;
      watched = next;
      if (!next) {
        pending = undefined;
        if (sendTimer) clearTimeout(sendTimer);
        sendTimer = undefined;
        if (watchTimer) clearTimeout(watchTimer);
        watchTimer = undefined;
      }
      log.debug({ executionId, watched }, next ? 'live view: watched' : 'live view: no longer watched');
      for (const listener of listeners) {
        try {
          listener(next);
        } catch (error) {
          log.warn({ err: String(error) }, 'live view listener failed');
        }
      }
    };

    /** Reached nobody: every viewer has gone. */
    const checkReach = (receivers: number) => {
      if (receivers === 0) setWatched(false);
    };
    const dropped = (error: unknown) => log.debug({ executionId, err: String(error) }, 'live view message dropped');

    const sendEvents = (events: LiveEvent[]) => {
      if (events.length === 0) return;
      const message: LiveMessage = { kind: 'events', events };
      publish(eventsChannel, JSON.stringify(message)).then(checkReach, dropped);
    };

    const pump = () => {
      if (!watched || inFlight || !pending || sendTimer) return;
      const waitMs = lastSentAt + frameIntervalMs - Date.now();
      if (waitMs > 0) {
        sendTimer = setTimeout(() => {
          sendTimer = undefined;
          pump();
        }, waitMs);
        sendTimer.unref();
        return;
      }
      const frame = pending;
      pending = undefined;
      inFlight = true;
      lastSentAt = Date.now();
      publish(framesChannel, frame.data)
        .then(checkReach, dropped)
        .finally(() => {
          inFlight = false;
          pump();
        });
    };

    const channel: LiveChannel & { noticed(join: boolean): void } = {
      get watched() {
        return watched;
      },
      onWatchChange(listener) {
        listeners.push(listener);
      },
      frame(frame) {
        latest = frame;
        if (!watched) return;
        pending = frame;
        pump();
      },
      event(line) {
        const entry = { seq: ++seq, line };
        backlog.push(entry);
        if (backlog.length > backlogEvents) backlog.shift();
        if (watched) sendEvents([entry]);
      },
      close() {
        if (closed) return;
        closed = true;
        channels.delete(executionId);
        if (watched) {
          const end: LiveMessage = { kind: 'end' };
          publish(eventsChannel, JSON.stringify(end)).catch(dropped);
        }
        setWatched(false);
        listeners.length = 0;
      },
      noticed(join) {
        if (closed) return;
        if (watchTimer) clearTimeout(watchTimer);
        watchTimer = setTimeout(() => setWatched(false), LIVE_WATCH_TTL_MS);
        watchTimer.unref();
        const fresh = !watched;
        setWatched(true);
        // A new viewer has seen nothing yet: the run so far, and the screen as it is now.
        if (join || fresh) {
          sendEvents([...backlog]);
          if (latest && !pending) {
            pending = latest;
            pump();
          }
        }
      },
    };
    return channel;
  }

  let closing: Promise<void> | undefined;
  return {
    open(executionId) {
      channels.get(executionId)?.close();
      const channel = createChannel(executionId);
      channels.set(executionId, channel);
      return channel;
    },
    close() {
      closing ??= (async () => {
        for (const channel of [...channels.values()]) channel.close();
        await Promise.allSettled([pub.quit().catch(() => pub.disconnect()), sub.quit().catch(() => sub.disconnect())]);
      })();
      return closing;
    },
  };
}
