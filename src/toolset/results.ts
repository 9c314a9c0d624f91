/**
 * Pieces every action space uses: the screenshot the model is shown, tool results in the
 * wire's shape (a toolset member's result echoes its `toolset_name`), and the `navigate` tool
 * that goes with computer use.
 */
import type { BrowserChange, BrowserSession, Screenshot } from '../browser/types.js';
import type { ImageBlock, ToolDefinition, ToolResultBlock } from '../model/types.js';
import type { DisplayGeometry } from './computer-types.js';
import type { ActionReport } from './types.js';
import type { TextBlock, ToolUseBlock } from '../contract/recording.js';

/** JPEG for the model: the same tokens as PNG (they follow pixels), a fifth of the bytes. */
export const MODEL_IMAGE_QUALITY = 80;

/** Settles the page, then captures what the model sees, at the display's size. */
export async function capture(session: BrowserSession, geometry: DisplayGeometry, signal: AbortSignal): Promise<ImageBlock> {
  await session.settle(signal);
  signal.throwIfAborted();
  return imageBlock(await screenshotForModel(session, geometry, signal));
}

export function screenshotForModel(session: Pick<BrowserSession, 'screenshot'>, geometry: DisplayGeometry, signal: AbortSignal): Promise<Screenshot> {
  const { display, viewport } = geometry;
  const scaled = display.width !== viewport.width || display.height !== viewport.height;
  return session.screenshot({ format: 'jpeg', quality: MODEL_IMAGE_QUALITY, ...(scaled ? { outputSize: display } : {}) }, signal);
}

export function imageBlock(shot: Screenshot): ImageBlock {
  return { type: 'image', source: { type: 'base64', media_type: shot.mediaType, data: shot.data.toString('base64') } };
}

export function textBlock(text: string): TextBlock {
  return { type: 'text', text };
}

/** A result for `call`, its `toolset_name` echoed when it has one. */
export function resultFor(call: ToolUseBlock, content: ToolResultBlock['content'], isError = false): ToolResultBlock {
  return {
    type: 'tool_result',
    tool_use_id: call.id,
    content: content.length > 0 ? content : [textBlock(isError ? 'The call failed.' : 'Done.')],
    ...(isError ? { is_error: true } : {}),
    ...(call.toolset_name ? { toolset_name: call.toolset_name } : {}),
  };
}

export function errorResult(call: ToolUseBlock, message: string): ToolResultBlock {
  return resultFor(call, [textBlock(message)], true);
}

/** A report for a call that was refused before it did anything. */
export function refused(call: ToolUseBlock, action: string, counted: boolean, error: string): ActionReport {
  return { result: errorResult(call, error), action, counted, ok: false, error, label: `${action} (refused)`, images: 0, changesPage: false };
}

export const NAVIGATE_TOOL = 'navigate';

/** Our `navigate` tool, offered with computer use (the browser toolset has its own). */
export const NAVIGATE_DEFINITION: ToolDefinition = {
  name: NAVIGATE_TOOL,
  description:
    "Open a URL in the current browser tab. Only the workflow's allowed domains can be reached; any other URL is refused with an error. Returns a screenshot of the page once it has loaded.",
  input_schema: {
    type: 'object',
    properties: { url: { type: 'string', description: 'Absolute http(s) URL to open.' } },
    required: ['url'],
    additionalProperties: false,
  },
};

/** Runs our `navigate` tool: allow-list first, then the load, then a screenshot. */
export async function runNavigate(call: ToolUseBlock, session: BrowserSession, geometry: DisplayGeometry, signal: AbortSignal): Promise<ActionReport> {
  const raw = call.input && typeof call.input === 'object' ? (call.input as Record<string, unknown>).url : undefined;
  if (typeof raw !== 'string' || raw.trim() === '') return refused(call, NAVIGATE_TOOL, true, 'navigate expects {"url": string}');
  const url = raw.trim();
  const before = session.currentUrl();
  const label = `navigate ${url}`;
  const result = await session.navigate(url, signal);
  const base = { action: NAVIGATE_TOOL, counted: true, label, trace: { tool: NAVIGATE_TOOL, input: { url }, url: before } };
  if (!result.ok) {
    const error = `navigation refused or failed: ${result.error ?? 'unknown error'}`;
    return { ...base, result: errorResult(call, error), ok: false, error, images: 0, changesPage: true };
  }
  const shot = await capture(session, geometry, signal);
  return { ...base, result: resultFor(call, [shot]), ok: true, images: 1, changesPage: true };
}

/** What the agent reads of a popup closed at the tab limit (docs/security.md#limits). */
export function popupClosedLine(change: Extract<BrowserChange, { type: 'popup_closed' }>, redact: (text: string) => string): string {
  const url = change.url && change.url !== 'about:blank' ? ` (${redact(change.url).slice(0, 200)})` : '';
  return `A popup the page opened${url} was closed: ${change.openPages} pages were open, the most one execution may have (${change.limit}).`;
}

/**
 * What happened in the browser besides the action (computer use has no browser_state block):
 * downloads, refused navigations, dismissed dialogs, as lines of text for the action's result.
 * Tabs are not mentioned: computer use follows the tab the page opens.
 */
export function changeNotes(session: Pick<BrowserSession, 'drainChanges' | 'pendingFileChooser'>, redact: (text: string) => string, uploadTool?: string): string | undefined {
  const lines: string[] = [];
  if (uploadTool && session.pendingFileChooser()) lines.push(`The page opened a file chooser: answer it with ${uploadTool} and the names of input files.`);
  for (const change of session.drainChanges()) {
    if (change.type === 'navigation_refused') lines.push(`A navigation to ${redact(change.url)} was refused: it is outside the allowed domains.`);
    else if (change.type === 'popup_closed') lines.push(popupClosedLine(change, redact));
    else if (change.type === 'dialog_dismissed') lines.push(`A ${change.kind} dialog "${redact(change.message).slice(0, 200)}" was dismissed.`);
    else if (change.type === 'download') {
      const { state, name, url, bytes, error } = change.download;
      if (state === 'started') lines.push(`A download started: ${name} from ${redact(url)}.`);
      else if (state === 'completed') lines.push(`The download ${name} finished (${bytes ?? 0} bytes); it is kept with the execution's results.`);
      else lines.push(`The download ${name} failed: ${redact(error ?? 'unknown reason')}.`);
    }
  }
  return lines.length > 0 ? lines.join('\n') : undefined;
}
