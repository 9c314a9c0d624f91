/**
 * A session's input (playwright-session.ts): pointer and keyboard events delivered to the
 * agent's tab. An input waits for the renderer to take the event, behind whatever the page's
 * scripts are doing; when the run's signal fires, the script running there is terminated and
 * the buttons and keys the call pressed are released (docs/action-spaces.md#cancellation).
 */
import type { Browser, CDPSession, Page } from 'playwright-core';
import type { Logger } from '../telemetry/types.js';
import { cancellable } from '../domain/cancel.js';
import { terminateScripts } from './cancellable.js';
import { KEYSTROKE_BATCH, keystrokesFor } from './keystrokes.js';
import { firstLine, type PlaywrightTab } from './playwright-tab.js';
import type { BrowserInput, MouseButton } from './types.js';

export interface InputParts {
  browser: Browser;
  activeTab: () => PlaywrightTab;
  openTabs: () => number;
  closing: () => boolean;
  logger: Logger;
}

export type SessionInput = Omit<BrowserInput, 'setInputFiles' | 'pendingFileChooser'> & {
  /** When the agent last acted (epoch ms): settling waits for what came since. */
  lastInputAt(): number;
  /** Marks an action that is not an input event (a navigation, files given) as the last one. */
  touch(): void;
};

/** What one input call pressed and has not released yet: released if the call is cancelled. */
interface Pressed {
  buttons: Set<MouseButton>;
  /** Each key held, with how to release it. */
  keys: Map<string, () => Promise<unknown>>;
}

export function createSessionInput(parts: InputParts): SessionInput {
  const { browser, logger } = parts;
  let pointer = { x: 0, y: 0 };
  let lastInputAt = 0;

  /**
   * Delivers an input to the agent's page. A popup may close under it (its own "Close" button
   * closes the window while Playwright still waits for the end of the click): that input was
   * taken, and the agent acts on the page below from now on. Any other failure is thrown.
   */
  const input = (signal: AbortSignal, fn: (page: Page, pressed: Pressed, tab: PlaywrightTab) => Promise<void>): Promise<void> => {
    lastInputAt = Date.now();
    const tab = parts.activeTab();
    const page = tab.page;
    const pressed: Pressed = { buttons: new Set(), keys: new Map() };
    // Counted before the input: the tab it closes may leave the registry before the error arrives.
    const tabsBefore = parts.openTabs();
    const deliver = async () => {
      try {
        await fn(page, pressed, tab);
      } catch (error) {
        // The last tab closing, or the browser going away, ends the session: that is thrown.
        if (signal.aborted || tabsBefore <= 1 || parts.closing() || !browser.isConnected() || !(await closedUnderInput(page, error))) throw error;
        logger.debug({ err: firstLine(error) }, 'the tab closed under the input; acting on the tab below');
      }
    };
    return cancellable(signal, deliver, () => {
      terminateScripts(tab.cdp)();
      void release(tab, pressed);
    });
  };

  const release = async (tab: PlaywrightTab, pressed: Pressed) => {
    // A tab (or session) already gone holds no pressed button or key: nothing is left to release.
    const client = await tab.cdp().catch(() => undefined);
    if (!client) return;
    for (const button of pressed.buttons) await dispatchButton(client, button, 'up', pointer).catch(() => undefined);
    for (const up of pressed.keys.values()) await up().catch(() => undefined);
  };

  /** One button down or up; `pressed` remembers what is held until it goes up. */
  const press = async (page: Page, tab: PlaywrightTab, pressed: Pressed, button: MouseButton, direction: 'down' | 'up', at: { x: number; y: number }) => {
    if (direction === 'down') pressed.buttons.add(button);
    if (isPlaywrightButton(button)) await (direction === 'down' ? page.mouse.down({ button }) : page.mouse.up({ button }));
    // Playwright's mouse knows left/right/middle; back and forward go through CDP.
    else await dispatchButton(await tab.cdp(), button, direction, at);
    if (direction === 'up') pressed.buttons.delete(button);
  };

  return {
    lastInputAt: () => lastInputAt,
    touch: () => void (lastInputAt = Date.now()),
    pointer: () => ({ ...pointer }),
    async mouseMove(x, y, signal) {
      await input(signal, (page) => page.mouse.move(x, y));
      pointer = { x, y };
    },
    mouseDown: (button, signal) => input(signal, (page, pressed, tab) => press(page, tab, pressed, button, 'down', pointer)),
    mouseUp: (button, signal) => input(signal, (page, pressed, tab) => press(page, tab, pressed, button, 'up', pointer)),
    async click(x, y, { button, clickCount }, signal) {
      await input(signal, async (page, pressed, tab) => {
        await page.mouse.move(x, y);
        pointer = { x, y };
        // A move held up by a busy page ends once the run stops (its script is terminated):
        // the press must not follow it then.
        signal.throwIfAborted();
        if (!isPlaywrightButton(button)) {
          await press(page, tab, pressed, button, 'down', { x, y });
          await press(page, tab, pressed, button, 'up', { x, y });
          return;
        }
        // Down and up one at a time, as mouse.click does: a click cancelled between them is released.
        for (let n = 1; n <= clickCount; n++) {
          pressed.buttons.add(button);
          await page.mouse.down({ button, clickCount: n });
          await page.mouse.up({ button, clickCount: n });
          pressed.buttons.delete(button);
        }
      });
      pointer = { x, y };
    },
    async wheel(x, y, deltaX, deltaY, signal) {
      await input(signal, async (page) => {
        await page.mouse.move(x, y);
        pointer = { x, y };
        signal.throwIfAborted();
        await page.mouse.wheel(deltaX, deltaY);
      });
    },
    keyDown: (key, signal) =>
      input(signal, async (page, pressed) => {
        pressed.keys.set(key, () => page.keyboard.up(key));
        await page.keyboard.down(key);
        pressed.keys.delete(key);
      }),
    keyUp: (key, signal) => input(signal, (page) => page.keyboard.up(key)),
    typeText: (text, signal) =>
      input(signal, async (_page, pressed, tab) => {
        // All of a batch's key events at once; CDP keeps them in order (see keystrokes.ts).
        const client = await tab.cdp();
        const commands = keystrokesFor(text);
        for (let i = 0; i < commands.length && !signal.aborted; i += KEYSTROKE_BATCH) {
          const batch = commands.slice(i, i + KEYSTROKE_BATCH);
          for (const c of batch) {
            if (c.method !== 'Input.dispatchKeyEvent') continue;
            const { params } = c;
            if (params.type === 'keyUp') pressed.keys.delete(params.code);
            else pressed.keys.set(params.code, () => client.send('Input.dispatchKeyEvent', { ...params, type: 'keyUp' }));
          }
          await Promise.all(batch.map((c) => client.send(c.method, c.params)));
        }
      }),
  };
}

function isPlaywrightButton(button: MouseButton): button is 'left' | 'right' | 'middle' {
  return button === 'left' || button === 'right' || button === 'middle';
}

function dispatchButton(client: CDPSession, button: MouseButton, direction: 'down' | 'up', at: { x: number; y: number }) {
  return client.send('Input.dispatchMouseEvent', { type: direction === 'down' ? 'mousePressed' : 'mouseReleased', x: at.x, y: at.y, button, clickCount: 1 });
}

/**
 * Whether `error` only says that `page` closed while it took an input. Playwright may reject
 * the input before the page's close event arrives: then the event is awaited, briefly.
 */
export async function closedUnderInput(page: Pick<Page, 'isClosed' | 'waitForEvent'>, error: unknown, waitMs = 2_000): Promise<boolean> {
  if (page.isClosed()) return true;
  const targetClosed = error instanceof Error && (error.name === 'TargetClosedError' || /target page, context or browser has been closed|target closed/i.test(error.message));
  if (!targetClosed) return false;
  return page.waitForEvent('close', { timeout: waitMs }).then(
    () => true,
    () => page.isClosed(),
  );
}
