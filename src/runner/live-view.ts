import type { BrowserSession, Screencast } from '../browser/types.js';
import type { LiveChannel } from '../live/types.js';
import type { ActiveRecording } from '../recorder/types.js';
import type { Logger } from '../telemetry/types.js';

/**
 * Where the live view's frames come from. With video on, the recorder's screencast is tapped
 * (a page has one screencast: a second Page.startScreencast on the same CDP session would take
 * the first one's frames away). With video off, a screencast of its own runs only while someone
 * watches, acknowledged no faster than the live frame rate so Chromium paints no frames nobody
 * will see.
 */

/** JPEG quality of the viewer-only screencast: a live view, not a recording. */
const LIVE_QUALITY = 60;
/** Least time between two frames of the viewer-only screencast (4 frames per second). */
const LIVE_FRAME_INTERVAL_MS = 250;

export interface LiveView {
  /** Stops feeding the channel; call before the session closes. Idempotent. */
  detach(): Promise<void>;
}

export function attachLiveView(options: { channel: LiveChannel; session: BrowserSession; video?: ActiveRecording; logger: Logger }): LiveView {
  const { channel, session, video, logger } = options;
  if (video) {
    const untap = video.tap((frame) => channel.frame(frame));
    return {
      async detach() {
        untap();
      },
    };
  }

  let detached = false;
  let screencast: Screencast | undefined;
  // Starts and stops one at a time, in the order the watch changed.
  let chain = Promise.resolve();
  const follow = (watched: boolean) => {
    chain = chain.then(async () => {
      if (watched && !screencast && !detached) {
        screencast = await session
          .startScreencast({ maxWidth: session.viewport.width, maxHeight: session.viewport.height, quality: LIVE_QUALITY }, (frame) => {
            channel.frame(frame);
            return new Promise<void>((resolve) => setTimeout(resolve, LIVE_FRAME_INTERVAL_MS).unref());
          })
          .catch((error: unknown) => {
            logger.warn({ err: error }, 'live view: screencast could not start');
            return undefined;
          });
      } else if ((!watched || detached) && screencast) {
        const stopping = screencast;
        screencast = undefined;
        // A screencast of a page already gone stops with it: nothing to undo, worth a debug line.
        await stopping.stop().catch((error: unknown) => logger.debug({ err: String(error) }, 'live view: screencast could not stop'));
      }
    });
  };
  channel.onWatchChange(follow);
  if (channel.watched) follow(true);
  return {
    detach() {
      detached = true;
      follow(false);
      return chain;
    },
  };
}
