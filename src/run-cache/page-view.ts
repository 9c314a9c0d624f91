/**
 * The page as a model request of the run cache shows it (the final check, a repair): the tab's
 * title and URL, a read of the viewport, and a screenshot in the action space's display size.
 * An open dialog comes first in the read, said to be open (the page read puts it there): a dialog
 * in front of the page is often what changed, and what is under it cannot be used until it closes.
 * Every text is redacted as a whole: a page can show a secret anywhere.
 */
import type { BrowserSession } from '../browser/types.js';
import { browserCall } from '../agent/browser-call.js';
import type { ImageBlock } from '../model/types.js';
import type { ActionSpace } from '../toolset/types.js';
import { recordView } from './record-view.js';

/** The viewport read's length: the same budget as a hand-over's read (docs/run-cache.md#replay). */
export const READ_MAX_CHARS = 4_000;
const IMAGE_QUALITY = 80;

export interface PageView {
  title: string;
  url: string;
  /** The read of what is in view, as lines (`(nothing readable in view)` when empty). */
  inView: string;
  /** Elements in view the read left out for its length. */
  omitted: number;
  image: ImageBlock;
  /** A content-first view's whole read (not redacted: for what the page shows, never sent as it is). */
  pageText?: string;
  /** Whether a content-first view found a main landmark. */
  main?: boolean;
}

export interface ViewOptions {
  /** `interactive`: only what one acts on, with references; absent: everything visible. */
  filter?: 'interactive';
  /** The whole page, content first: the main landmark, navigation and menus summarised (record-view.ts). */
  contentFirst?: boolean;
}

/** How much of the page a content-first view reads before it is cut to the view's budget. */
const WHOLE_READ_MAX_CHARS = 40_000;

export async function viewPage(session: BrowserSession, space: Pick<ActionSpace, 'display'>, redact: (text: string) => string, options: ViewOptions, signal: AbortSignal): Promise<PageView> {
  return browserCall(async (cancel) => {
    await session.settle(cancel);
    const tab = session.tab();
    const { display, viewport } = { display: space.display, viewport: session.viewport };
    const scaled = display.width !== viewport.width || display.height !== viewport.height;
    const shot = await session.screenshot({ format: 'jpeg', quality: IMAGE_QUALITY, ...(scaled ? { outputSize: display } : {}) }, cancel);
    const read = tab
      ? await tab.readPage(options.contentFirst ? { filter: 'all', maxChars: WHOLE_READ_MAX_CHARS } : { ...(options.filter ? { filter: options.filter } : {}), maxChars: READ_MAX_CHARS }, cancel)
      : undefined;
    const title = tab ? await tab.title(cancel) : '';
    const found = read?.ok && read.value.lines.length > 0 ? read.value.lines : undefined;
    const record = options.contentFirst && found ? recordView(found, READ_MAX_CHARS) : undefined;
    const lines = record ? record.text : found ? found.join('\n') : '(nothing readable in view)';
    const image: ImageBlock = { type: 'image', source: { type: 'base64', media_type: shot.mediaType, data: shot.data.toString('base64') } };
    return {
      title: redact(title),
      url: redact(session.currentUrl()),
      inView: redact(lines),
      omitted: read?.ok ? read.value.omitted : 0,
      image,
      ...(record ? { pageText: record.pageText, main: record.main } : {}),
    };
  }, signal);
}
