import type { BrowserSession, Screenshot, Size } from '../browser/types.js';
import type { InputSource } from '../domain/input-references.js';
import type { ComputerToolType } from '../domain/action-spaces.js';

/**
 * The geometry between the model's display and the browser viewport. The model sees and
 * clicks in display pixels; the browser works in viewport CSS pixels. They differ only when
 * the viewport exceeds the model's image limits and screenshots are scaled down.
 */
export interface DisplayGeometry {
  /** What the tool declares to the model (display_width_px / display_height_px). */
  display: Size;
  /** The browser's viewport. */
  viewport: Size;
  /** display → viewport coordinates (rounded, clamped inside the viewport). */
  toViewport(x: number, y: number): { x: number; y: number };
  /** viewport → display coordinates. */
  toDisplay(x: number, y: number): { x: number; y: number };
}

export interface ActionContext {
  session: BrowserSession;
  geometry: DisplayGeometry;
  toolVersion: ComputerToolType;
  /** The input's values by name: each `{{path}}` of text to type becomes the value (a secret revealed) as it is typed. */
  vault: InputSource;
  signal: AbortSignal;
  /**
   * Called once a valid action is about to touch the browser, with what it will do: the video
   * marks it before the page reacts, so the marker is on the frames that show the reaction.
   */
  beforeRun?: (planned: { label: string; point?: { x: number; y: number } }) => void;
}

/** What one `computer` tool call did, for the loop to answer the model and count. */
export type ActionOutcome =
  | {
      ok: true;
      /** The action name as the model sent it. */
      action: string;
      /** False for pure queries that do not touch the browser (screenshot, zoom, cursor_position). */
      counted: boolean;
      /** True when the loop should settle the page and send a fresh full screenshot. */
      wantsScreenshot: boolean;
      /** Text for the tool result (e.g. `X=12,Y=40` for cursor_position). */
      text?: string;
      /** An image to send instead of the full screenshot (zoom). */
      image?: Screenshot;
      /** Short description for logs and the video's steps track; secrets as placeholders. */
      label: string;
      /** Where a pointer action landed, in viewport px (for the video marker). */
      point?: { x: number; y: number };
    }
  | {
      ok: false;
      action: string;
      /** A bad call still counts as an attempted action when it named a known action. */
      counted: boolean;
      /** Reason given to the model with `is_error: true`. */
      error: string;
      label: string;
    };

/** Executes one `computer` tool input against the session. Never throws for bad input. */
export type ExecuteComputerAction = (input: unknown, context: ActionContext) => Promise<ActionOutcome>;
