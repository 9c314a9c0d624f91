/**
 * The browser port: one sandbox per worker process, one session (an isolated context and its
 * page) per execution. Coordinates are CSS pixels of the session's viewport; keys are DOM key
 * names (`Control`, `Shift`, `Enter`, `a`, `F5`), never xdotool names.
 */

import type { CalendarView, ElementIdentity, FoundElement, Point, PopupOption, WidgetState } from './page/shapes.js';
import type { StorageState } from '../contract/storage-state.js';

/** The shapes the page scripts answer with are declared once, beside the page code. */
export type { CalendarView, ElementIdentity, FoundElement, Point, PopupOption, WidgetState };

export interface Size {
  width: number;
  height: number;
}

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export type MouseButton = 'left' | 'right' | 'middle' | 'back' | 'forward';

/** Which layer of confinement refused a request (docs/specification.md#the-allow-list). */
export type BlockLayer = 'navigate-tool' | 'proxy' | 'request-guard' | 'popup' | 'download' | 'service-worker' | 'websocket';

export interface BlockedRequest {
  url: string;
  layer: BlockLayer;
  reason: string;
}

/**
 * The limits on what one session's pages make (docs/security.md#limits), each one a
 * configuration variable (docs/configuration.md); the defaults are DEFAULT_PAGE_LIMITS (page-limits.ts).
 */
export interface PageLimits {
  /** BROWSER_TABS_MAX: pages open at once; a popup past it is closed as it appears. */
  tabsMax: number;
  /** CONSOLE_LINE_MAX_CHARS: a console line or page error is cut to this many characters. */
  consoleLineMaxChars: number;
  /** CONSOLE_ENTRIES_MAX: console entries a tab keeps between two reads (the oldest go first). */
  consoleEntriesMax: number;
  /** CONSOLE_BYTES_MAX: console bytes (UTF-8) the session keeps across its tabs; past it new lines are dropped. */
  consoleBytesMax: number;
}

/** A limit reached, as the `resource_limit_reached` event tells it. */
export interface LimitReached {
  /** The configuration variable. */
  limit: string;
  max: number;
  value: number;
  unit: 'bytes' | 'chars' | 'tabs' | 'entries';
  action: 'cut' | 'closed' | 'stopped' | 'ended';
  detail?: string;
}

export interface SessionOptions {
  executionId: string;
  viewport: Size;
  /** The specification's allow-list (docs/specification.md). */
  allowedDomains: readonly string[];
  /** Called for each refused request; the session goes on. */
  onBlocked: (event: BlockedRequest) => void;
  /** Called once if the browser or the page dies under the session. */
  onCrash?: (error: Error) => void;
  /**
   * Where downloads from allowed hosts are saved (docs/files-and-codes.md); without it every download is
   * refused. Each download's lifecycle is reported through `onDownload`.
   */
  downloads?: {
    dir: string;
    maxBytes: number;
    /**
     * How long a download still running at close may take to finish (default 10 s; none when
     * the signal given to openSession has aborted); then it is cancelled.
     */
    graceMs?: number;
  };
  onDownload?: (event: DownloadEvent) => void;
  /** The execution's input files: the only files a page's file input may ever receive. */
  inputFiles?: readonly StagedFile[];
  /** Called when a page opens a file chooser (the session holds it until files are chosen). */
  onFileChooser?: (event: FileChooserEvent) => void;
  /**
   * A browser profile's saved state (docs/profiles.md), put into the fresh context before its
   * first page opens; cookies and origins of hosts outside the allow-list are dropped first.
   */
  storageState?: StorageState;
  /** Note pages that ask for a sign-in (a password or one-time-code field): `signInSeen()`. */
  watchSignIn?: boolean;
  /** The limits on what the pages make (docs/security.md#limits); default DEFAULT_PAGE_LIMITS. */
  limits?: PageLimits;
  /** Called the first time each limit is reached (per tab for a tab's own, else per session). */
  onLimit?: (reached: LimitReached) => void;
}

/** A local file offered to pages under its name. */
export interface StagedFile {
  name: string;
  /** Absolute path; only the session reads it, the model never sees it. */
  path: string;
}

/**
 * One step of a download's life. `started` comes first, then exactly one of `completed` or
 * `failed` (refused downloads never start: they are `blocked` events).
 */
export interface DownloadEvent {
  /** `download-1`, `download-2`… in order of start. */
  id: string;
  state: 'started' | 'completed' | 'failed';
  /** The URL the file came from (after redirects). */
  url: string;
  /** Safe and unique among the execution's downloads: its artifact is `downloads/{name}`. */
  name: string;
  /** completed: size, hash, type and the saved file (never shown to the model). */
  bytes?: number;
  sha256?: string;
  contentType?: string;
  path?: string;
  /** failed: why (too large, cancelled by the page, not done within the grace after the run, …). */
  error?: string;
}

export interface FileChooserEvent {
  /** The chooser accepts several files (`<input multiple>`). */
  multiple: boolean;
  /** URL of the page that opened it. */
  url: string;
}

/** Where `setInputFiles` puts files: the pending file chooser, or the file input at a point. */
export type FileInputTarget = { kind: 'chooser' } | { kind: 'point'; x: number; y: number };

export type FileInputResult = { ok: true; names: string[] } | { ok: false; error: string };

export interface Screenshot {
  data: Buffer;
  mediaType: 'image/png' | 'image/jpeg';
  /** Pixel size of the image (may be smaller than the viewport when scaled). */
  width: number;
  height: number;
}

export interface ScreenshotOptions {
  /** Region of the viewport to capture (CSS px); the whole viewport when absent. */
  clip?: Rect;
  /** Size of the returned image; the captured region is scaled to it. Default: region size. */
  outputSize?: Size;
  /** Default PNG (lossless, for checks); what the model sees is JPEG (smaller requests, same tokens). */
  format?: 'png' | 'jpeg';
  /** JPEG quality 0–100 (default 80). */
  quality?: number;
}

export interface ScreencastFrame {
  /** JPEG bytes. */
  data: Buffer;
  /** Wall-clock time the frame was painted, epoch milliseconds. */
  timestampMs: number;
  width: number;
  height: number;
}

export interface ScreencastOptions {
  maxWidth: number;
  maxHeight: number;
  /** JPEG quality 0–100. */
  quality: number;
}

export interface Screencast {
  /** Stops the stream; no frame is delivered after it resolves. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Receives one frame. The adapter acknowledges the frame to the browser (which then sends the
 * next one) only when the returned promise settles: that is the consumer's back-pressure.
 */
export type FrameHandler = (frame: ScreencastFrame) => void | Promise<void>;

export interface NavigationResult {
  ok: boolean;
  /** The URL the page shows after the navigation (or the attempt). */
  url: string;
  /** HTTP status of the document, when one was received. */
  status?: number;
  /** Why it failed, when it did. */
  error?: string;
}

/** An answer the agent can act on: a value, or the reason it could not be had. */
export type StructureResult<T> = { ok: true; value: T } | { ok: false; error: string };

export interface PageReadOptions {
  /** Absent: visible elements in the viewport; `interactive`: only those one acts on; `all`: off-viewport ones too. */
  filter?: 'interactive' | 'all';
  /** With `interactive`: those outside the viewport too (the opening's overview of the page). */
  wholePage?: boolean;
  /** Nesting levels of reported elements (default 15). */
  depth?: number;
  /** Read only this element's subtree. */
  ref?: string;
  /** The text stops growing at this many characters; what did not fit is counted. */
  maxChars: number;
  /** A select's options listed below it, at most (40 when not said). */
  optionsMax?: number;
}

export interface PageRead {
  /** One element (or text run) per line: `role "name" [ref_N] state…`, indented by nesting. */
  lines: string[];
  /** Elements left out because the text reached its limit. */
  omitted: number;
  /** Elements left out because they were nested deeper than `depth`. */
  deeper: number;
}

export interface TabInfo {
  id: string;
  url: string;
  title: string;
  active: boolean;
}

/** Something that happened in the browser between two reports to the agent. */
export type BrowserChange =
  | { type: 'tab_opened'; tabId: string }
  | { type: 'navigation_refused'; tabId: string; url: string }
  /** A popup the page opened was closed at once: `openPages` were open, the most `limit` (BROWSER_TABS_MAX) allows. */
  | { type: 'popup_closed'; tabId: string; url: string; openPages: number; limit: 'BROWSER_TABS_MAX' }
  | { type: 'dialog_dismissed'; tabId: string; kind: string; message: string }
  | { type: 'download'; download: DownloadEvent };

export interface ConsoleEntry {
  level: string;
  text: string;
  atMs: number;
}

export interface NetworkEntry {
  method: string;
  url: string;
  /** HTTP status; absent when the request failed or was refused. */
  status?: number;
  mimeType?: string;
  durationMs?: number;
  /** Why the request failed (refused by the allow-list, connection error). */
  failure?: string;
  atMs: number;
}

/**
 * Cancellation (docs/action-spaces.md#cancellation): every async method of the ports below takes
 * the run's signal as its last argument. When it fires, the call stops what the browser does for
 * it (a script running in the page is terminated, a load is stopped, buttons and keys it pressed
 * are released) and rejects with the signal's reason; `settle` just returns. A call that the
 * browser cannot stop is bounded and says so where it is made.
 */

/** What a tab's page shows: its structure as text, its logs, its pixels and scripts run in it. */
export interface PageReader {
  readonly id: string;
  url(): string;
  title(signal: AbortSignal): Promise<string>;
  readPage(options: PageReadOptions, signal: AbortSignal): Promise<StructureResult<PageRead>>;
  find(rank: (candidates: FoundElement[]) => number[], limit: number, signal: AbortSignal): Promise<string[]>;
  pageText(maxChars: number, signal: AbortSignal): Promise<{ text: string; total: number; cut: boolean }>;
  /**
   * A short digest of what the page shows (text, field values, scrolling, focus and canvas pixels,
   * of every frame too): two reads are equal when the page did not change in between
   * (docs/action-spaces.md#stuck-loops).
   */
  contentDigest(signal: AbortSignal): Promise<string>;
  /** Runs a script expression in the page (its own world and authority) and returns its value as text. */
  evaluate(expression: string, timeoutMs: number, signal: AbortSignal): Promise<StructureResult<string>>;
  /** The days of the pop-up calendar the page shows, and its previous/next month controls. */
  calendar(signal: AbortSignal): Promise<CalendarView>;
  /** Console entries and network requests since the last call (each read drains them). */
  drainConsole(): ConsoleEntry[];
  drainNetwork(): NetworkEntry[];
  screenshot(options: ScreenshotOptions, signal: AbortSignal): Promise<Screenshot>;
}

/** The elements of a tab's page by reference (`ref_N`) and by identity: where they are, what they are, their values. */
export interface ElementLocator {
  pointOf(ref: string, signal: AbortSignal): Promise<StructureResult<Point>>;
  /** `at`: when the page took the value (epoch ms): settling waits for what the page does from then. */
  setValue(ref: string, value: string | number | boolean, signal: AbortSignal): Promise<StructureResult<{ shown?: string; at?: number }>>;
  scrollTo(ref: string, signal: AbortSignal): Promise<StructureResult<null>>;
  identify(ref: string, signal: AbortSignal): Promise<StructureResult<ElementIdentity>>;
  identifyAt(point: Point, signal: AbortSignal): Promise<ElementIdentity | null>;
  locate(identity: ElementIdentity, signal: AbortSignal): Promise<StructureResult<{ ref: string; enabled: boolean; inView: boolean }>>;
  focused(signal: AbortSignal): Promise<{ identity: ElementIdentity; editable: boolean } | null>;
  /** Gives the referenced element the keyboard focus; its identity, or why it cannot take it. */
  focus(ref: string, signal: AbortSignal): Promise<StructureResult<ElementIdentity>>;
  /**
   * Marks a field (the referenced one, or with null the focused one) before a secret goes into
   * it: it reads as `shownAs` (the model's `{{path}}` text) in every read of the page from then
   * on, whatever it holds later (docs/secrets.md#fields), and its text is drawn as discs, so
   * screenshots, the video and the live view never show the value.
   */
  hideText(ref: string | null, signal: AbortSignal, shownAs: string): Promise<boolean>;
  describe(ref: string, signal: AbortSignal): Promise<{ role: string; name: string; tag: string; type?: string } | null>;
  /** What kind of widget form_input fills by hand (widget-input.ts), and what it holds now. */
  widget(ref: string, signal: AbortSignal): Promise<StructureResult<WidgetState>>;
  /** The options a choice widget's pop-up shows now, with references. */
  popupOptions(ref: string, signal: AbortSignal): Promise<StructureResult<PopupOption[]>>;
  /** Gives the named input files to the file input of a reference (or the input a label of it names). */
  setFiles(ref: string, names: readonly string[], signal: AbortSignal): Promise<FileInputResult>;
}

/** One tab of the session: its page's structure, logs and pixels. */
export interface BrowserTab extends PageReader, ElementLocator {}

/** Where the agent's tab goes: its URL, the allow-list, history. */
export interface BrowserNavigation {
  /** Opens a URL in the current tab. Refused (ok: false) outside the allow-list. */
  navigate(url: string, signal: AbortSignal): Promise<NavigationResult>;
  /** Back, forward or reload in the current tab. */
  history(direction: 'back' | 'forward' | 'reload', signal: AbortSignal): Promise<NavigationResult>;
  /** Whether the allow-list lets the agent open `url` (reports a refusal as `blocked`). */
  checkUrl(url: string): { ok: true } | { ok: false; reason: string };
  /** URL of the page the agent is acting on. */
  currentUrl(): string;
}

/** The session's tabs, the active one, and what happened to them between two reports. */
export interface BrowserTabs {
  /** Open tabs, oldest first; exactly one is active while any is open. */
  tabs(signal: AbortSignal): Promise<TabInfo[]>;
  /** A tab by id, or the active one. */
  tab(id?: string): BrowserTab | undefined;
  /** Opens an empty tab and makes it the active one. */
  newTab(signal: AbortSignal): Promise<TabInfo>;
  /** Makes a tab the one the agent acts on (and the one the video shows). */
  switchTab(id: string, signal: AbortSignal): Promise<boolean>;
  /** Closes a tab; the last open tab cannot be closed. */
  closeTab(id: string, signal: AbortSignal): Promise<StructureResult<null>>;
  /** What happened since the last call: tabs the pages opened, navigations refused, dialogs dismissed. */
  drainChanges(): BrowserChange[];
}

/** Pointer, keyboard and files, delivered to the active tab. */
export interface BrowserInput {
  mouseMove(x: number, y: number, signal: AbortSignal): Promise<void>;
  mouseDown(button: MouseButton, signal: AbortSignal): Promise<void>;
  mouseUp(button: MouseButton, signal: AbortSignal): Promise<void>;
  click(x: number, y: number, options: { button: MouseButton; clickCount: number }, signal: AbortSignal): Promise<void>;
  /** Wheel event at (x, y) by (deltaX, deltaY) CSS pixels. */
  wheel(x: number, y: number, deltaX: number, deltaY: number, signal: AbortSignal): Promise<void>;
  /** Current pointer position (the last position the session moved it to). */
  pointer(): { x: number; y: number };

  keyDown(key: string, signal: AbortSignal): Promise<void>;
  keyUp(key: string, signal: AbortSignal): Promise<void>;
  /** Types text as keystrokes (characters without a key are inserted). */
  typeText(text: string, signal: AbortSignal): Promise<void>;

  /**
   * Gives the files named (input files of SessionOptions.inputFiles, by name: the port takes no
   * path) to the pending file chooser of the agent's page, or to the file input at a point.
   * A name that is not an input file, no chooser or no file input is `ok: false` with a reason.
   */
  setInputFiles(names: readonly string[], target: FileInputTarget, signal: AbortSignal): Promise<FileInputResult>;
  /** The file chooser the agent's page opened and nobody answered yet, if any. */
  pendingFileChooser(): FileChooserEvent | undefined;
}

/** Pixels of the agent's tab: still pictures, settling before them, the screencast. */
export interface BrowserCapture {
  readonly viewport: Size;
  screenshot(options: ScreenshotOptions, signal: AbortSignal): Promise<Screenshot>;
  /**
   * Resolves when the page is still enough to capture: navigation settled, network quiet,
   * no repaint for a short window; bounded by a cap. Never rejects for a busy page, and
   * returns at once when the signal fires. It waits for what the page does since the last input
   * event, or since `sinceMs` (epoch ms) when the action changed the page otherwise (a value set
   * by script).
   */
  settle(signal: AbortSignal, sinceMs?: number): Promise<void>;
  /**
   * Streams frames of the page the agent is acting on, following new tabs. It takes no signal:
   * it resolves once the stream runs, and `stop()` is how the stream is ended.
   */
  startScreencast(options: ScreencastOptions, onFrame: FrameHandler): Promise<Screencast>;
}

/** One execution's browser: the parts above, composed. */
export interface BrowserSession extends BrowserNavigation, BrowserTabs, BrowserInput, BrowserCapture {
  /** The context's state of allowed hosts only (docs/profiles.md); read before close(). */
  storageState?(signal: AbortSignal): Promise<StorageState>;
  /** With `watchSignIn`: whether a page of the run asked for a sign-in. */
  signInSeen?(): boolean;
  /**
   * What the session's pages hold in the browser now, in bytes (their scripts' heap, the DOM's
   * heap, array buffers); a page that does not answer counts with what it last held
   * (docs/security.md#browser-memory).
   */
  memoryBytes?(signal: AbortSignal): Promise<number>;

  /** Closes the context; safe to call twice and after a crash. */
  close(): Promise<void>;
}

export interface BrowserSandbox {
  openSession(options: SessionOptions, signal: AbortSignal): Promise<BrowserSession>;
  /** Resolves when a browser is running and able to open a session (for /readyz). */
  checkReady(signal: AbortSignal): Promise<void>;
  /** Stops the browser; idempotent. */
  close(): Promise<void>;
}
