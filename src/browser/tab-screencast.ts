/**
 * The session's screencast: Chromium's frames of the active tab, one at a time and each
 * acknowledged only once the consumer is done with it (that is the back-pressure), moved to
 * another tab when that one becomes active.
 */
import type { CDPSession, Page } from 'playwright-core';
import type { Logger } from '../telemetry/types.js';
import { firstLine, jpegSize, type PlaywrightTab } from './playwright-tab.js';
import type { FrameHandler, Screencast, ScreencastOptions } from './types.js';

export interface ScreencastHost {
  activeTab(): PlaywrightTab | undefined;
  /** Calls `listener` whenever another tab becomes active (or the active one closes). */
  onActiveChange(listener: () => void): () => void;
  closing(): boolean;
  logger: Logger;
}

interface ScreencastFramePayload {
  data: string;
  sessionId: number;
  metadata: { deviceWidth: number; deviceHeight: number; timestamp?: number };
}

/** Streams the active tab; when another tab becomes active, moves the stream there. */
export async function followActiveTab(host: ScreencastHost, cast: ScreencastOptions, onFrame: FrameHandler): Promise<Screencast> {
  const { logger } = host;
  let stopped = false;
  let current: { page: Page; client: CDPSession; handler: (event: ScreencastFramePayload) => void } | undefined;
  let chain = Promise.resolve();
  let delivery = Promise.resolve();

  const detach = async () => {
    const was = current;
    current = undefined;
    if (!was) return;
    was.client.off('Page.screencastFrame', was.handler);
    // A tab that closed took its screencast with it.
    await was.client.send('Page.stopScreencast').catch(() => undefined);
  };
  const attach = async (tab: PlaywrightTab) => {
    const client = await tab.cdp();
    const handler = (event: ScreencastFramePayload) => {
      // A frame of a tab that closed needs no acknowledgement: no next frame will come.
      const ack = () => client.send('Page.screencastFrameAck', { sessionId: event.sessionId }).catch(() => undefined);
      if (stopped || current?.client !== client) return void ack();
      const data = Buffer.from(event.data, 'base64');
      const size = jpegSize(data) ?? { width: event.metadata.deviceWidth, height: event.metadata.deviceHeight };
      // metadata.timestamp is seconds since the epoch (fractional).
      const timestampMs = event.metadata.timestamp !== undefined ? event.metadata.timestamp * 1000 : Date.now();
      // One frame at a time, in order, each acknowledged only when the consumer is done with
      // it: that is the back-pressure (Chromium keeps a frame or two in flight at most).
      delivery = delivery.then(async () => {
        try {
          if (!stopped) await onFrame({ data, timestampMs, ...size });
        } catch (error) {
          logger.warn({ err: firstLine(error) }, 'screencast frame handler failed');
        } finally {
          void ack();
        }
      });
    };
    client.on('Page.screencastFrame', handler);
    current = { page: tab.page, client, handler };
    await client.send('Page.startScreencast', { format: 'jpeg', quality: cast.quality, maxWidth: cast.maxWidth, maxHeight: cast.maxHeight, everyNthFrame: 1 });
  };
  const follow = () => {
    chain = chain.then(async () => {
      const tab = host.activeTab();
      if (stopped || current?.page === tab?.page) return;
      await detach();
      if (tab && !tab.page.isClosed() && !host.closing()) await attach(tab).catch((error: unknown) => logger.warn({ err: firstLine(error) }, 'screencast could not follow the page'));
    });
  };
  const unsubscribe = host.onActiveChange(follow);
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      stopped = true;
      unsubscribe();
      await chain;
      await detach();
    })();
    return stopping;
  };
  follow();
  await chain;
  return { stop };
}
