/**
 * Navigations of a page's frames (not its main document): when each was asked for and when it
 * came to an outcome (its document committed, or its request failed or was refused). settle()
 * waits for a frame the action navigated as it waits for the page: its document loaded and
 * still (docs/action-spaces.md#frames).
 */
import type { Frame, Page } from 'playwright-core';

export interface FrameNavigations {
  /** Starts following a page's frames. */
  follow(page: Page): void;
  /** Frames of `page` asked to navigate at or after `sinceMs`. */
  startedSince(page: Page, sinceMs: number): Frame[];
  /** Whether the frame's last navigation asked for at or after `sinceMs` came to an outcome. */
  settledSince(frame: Frame, sinceMs: number): boolean;
  /** Wakers called after each outcome (for wait-until.ts). */
  readonly wakers: Set<() => void>;
}

export function createFrameNavigations(): FrameNavigations {
  const asked = new WeakMap<Frame, number>();
  const ended = new WeakMap<Frame, number>();
  const wakers = new Set<() => void>();
  const end = (frame: Frame) => {
    ended.set(frame, Date.now());
    [...wakers].forEach((wake) => wake());
  };
  return {
    wakers,
    follow(page) {
      const child = (frame: Frame | null | undefined): frame is Frame => !!frame && frame !== page.mainFrame();
      page.on('request', (request) => {
        const frame = request.isNavigationRequest() ? request.frame() : undefined;
        if (child(frame)) asked.set(frame, Date.now());
      });
      page.on('requestfailed', (request) => {
        const frame = request.isNavigationRequest() ? request.frame() : undefined;
        if (child(frame)) end(frame);
      });
      page.on('framenavigated', (frame) => {
        if (child(frame)) end(frame);
      });
      page.on('framedetached', (frame) => end(frame));
    },
    startedSince: (page, sinceMs) => page.frames().filter((frame) => (asked.get(frame) ?? -1) >= sinceMs),
    settledSince: (frame, sinceMs) => frame.isDetached() || (ended.get(frame) ?? -1) >= Math.max(sinceMs, asked.get(frame) ?? 0),
  };
}
