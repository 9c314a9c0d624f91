/**
 * Downloads of a session (docs/files-and-codes.md). The request guard refuses downloads from outside the
 * allow-list and hands the others here; each is saved under a safe, unique name in the session's
 * downloads folder, or cancelled and reported failed when it grows past the size limit.
 *
 * Playwright tells when a download starts and ends but not how far it got, so each page also
 * gets a CDP session of its own listening to `Page.downloadProgress`: the bytes received (and
 * the announced total) are compared with the limit as they arrive, and a download past it is
 * cancelled before it fills the disk. The two streams of events are matched by URL and suggested
 * name, in order.
 *
 * A download started in a popup (`target=_blank`) announces its progress to the popup's page
 * before any session of ours is attached there, so the browser's downloads folder is watched
 * too: Chromium writes `<guid>.crdownload` there as bytes arrive, and a file past the limit is
 * cancelled by its guid through a browser-level CDP session (a popup's download otherwise ran
 * past the limit unseen; docs/files-and-codes.md#downloads). Whatever
 * slips through both is still checked once saved, and dropped when too large.
 */
import { createHash } from 'node:crypto';
import { createReadStream, watch, type FSWatcher } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { BrowserContext, CDPSession, Download, Page } from 'playwright-core';

import { settledOrAborted } from '../domain/cancel.js';
import { contentTypeOf, safeFileName, uniqueName } from '../domain/file-names.js';
import type { Logger } from '../telemetry/types.js';
import type { DownloadEvent } from './types.js';

export interface DownloadTracker {
  /** Takes over a download the guard allowed. */
  accept(download: Download): void;
  /**
   * Gives the downloads still running `graceMs` to finish (none once the run's signal has
   * aborted), cancels the rest, waits until each one is reported, detaches; idempotent.
   */
  close(): Promise<void>;
}

export interface DownloadOptions {
  dir: string;
  maxBytes: number;
  /** How long a download running when the session closes may take to finish. */
  graceMs?: number;
  /** The run's signal: once it aborts (deadline, shutdown, crash) there is no grace. */
  signal?: AbortSignal;
  /**
   * The browser's downloads folder (Playwright's `downloadsPath`), watched for files growing past
   * the limit. Other contexts of the browser write there too: a guid not of this context is
   * refused by Chromium and left alone.
   */
  stagingDir?: string;
  onEvent: (event: DownloadEvent) => void;
  logger: Logger;
}

/** Downloads one execution may start; a page looping on downloads must not fill the disk. */
export const MAX_DOWNLOADS = 50;
/**
 * The agent often ends the run right after the click that starts a download ("download the
 * invoice, then finish"): such a download is given this long to arrive before it is cancelled.
 */
export const DEFAULT_DOWNLOAD_GRACE_MS = 10_000;
/** Content types remembered from responses, by URL, until their download starts. */
const REMEMBERED_TYPES = 100;

interface Progress {
  guid: string;
  url: string;
  suggestedFilename: string;
  receivedBytes: number;
  totalBytes: number;
  tracked?: Tracked;
}

interface Tracked {
  download: Download;
  id: string;
  name: string;
  url: string;
  progress?: Progress;
  /** Set when the worker cancels it: why. */
  cancelReason?: string;
}

export function attachDownloads(context: BrowserContext, opts: DownloadOptions): DownloadTracker {
  const { logger } = opts;
  const taken = new Set<string>();
  const running = new Set<Tracked>();
  const settling = new Set<Promise<void>>();
  const unmatched: Progress[] = [];
  const progressByGuid = new Map<string, Progress>();
  const cdpSessions = new Set<Promise<CDPSession | undefined>>();
  const typesByUrl = new Map<string, string>();
  let count = 0;
  let closing: Promise<void> | undefined;

  const emit = (event: DownloadEvent): void => {
    try {
      opts.onEvent(event);
    } catch (error) {
      logger.warn({ err: error }, 'download event handler threw');
    }
  };

  const tooLarge = (bytes: number) => `larger than the download limit of ${opts.maxBytes} bytes (${bytes} bytes or more)`;

  const cancel = (tracked: Tracked, reason: string): void => {
    tracked.cancelReason ??= reason;
    // A download that cannot be cancelled has ended; `settle` reports it failed with the reason.
    tracked.download.cancel().catch(() => undefined);
  };

  const checkSize = (progress: Progress): void => {
    const { tracked } = progress;
    if (!tracked || tracked.cancelReason) return;
    const seen = Math.max(progress.receivedBytes, progress.totalBytes);
    if (seen > opts.maxBytes) cancel(tracked, tooLarge(seen));
  };

  const link = (tracked: Tracked, progress: Progress): void => {
    tracked.progress = progress;
    progress.tracked = tracked;
    checkSize(progress);
  };

  const watchProgress = (page: Page): void => {
    const session = (async () => {
      try {
        const cdp = await context.newCDPSession(page);
        cdp.on('Page.downloadWillBegin', (event) => {
          const progress: Progress = { guid: event.guid, url: event.url, suggestedFilename: event.suggestedFilename, receivedBytes: 0, totalBytes: 0 };
          progressByGuid.set(event.guid, progress);
          const waiting = [...running].find((t) => !t.progress && t.download.url() === event.url && t.download.suggestedFilename() === event.suggestedFilename);
          if (waiting) link(waiting, progress);
          else unmatched.push(progress);
        });
        cdp.on('Page.downloadProgress', (event) => {
          const progress = progressByGuid.get(event.guid);
          if (!progress) return;
          progress.receivedBytes = event.receivedBytes;
          progress.totalBytes = event.totalBytes;
          checkSize(progress);
          if (event.state !== 'inProgress') {
            progressByGuid.delete(event.guid);
            // A refused download is never accepted: its record must not wait forever. (One that
            // finished before Playwright announced it is only checked once saved.)
            const index = unmatched.indexOf(progress);
            if (index >= 0) unmatched.splice(index, 1);
          }
        });
        await cdp.send('Page.enable');
        return cdp;
      } catch (error) {
        // A page closed at once (a popup that only downloads) has nothing to follow.
        logger.debug({ err: (error as Error).message }, 'download progress not followed for a page');
        return undefined;
      }
    })();
    cdpSessions.add(session);
  };

  const onResponse = (response: { url(): string; headers(): Record<string, string>; request(): { isNavigationRequest(): boolean } }): void => {
    const headers = response.headers();
    const type = headers['content-type'];
    if (!type || !(/^\s*attachment/i.test(headers['content-disposition'] ?? '') || response.request().isNavigationRequest())) return;
    typesByUrl.set(response.url(), type);
    if (typesByUrl.size > REMEMBERED_TYPES) typesByUrl.delete(typesByUrl.keys().next().value!);
  };

  // Reasons for downloads cancelled by guid, claimed in order by the downloads that fail next.
  const cancelledByDisk: string[] = [];
  const seenOnDisk = new Set<string>();
  let browserSession: Promise<CDPSession | undefined> | undefined;
  let contextId: Promise<string | undefined> | undefined;

  /** This context's id, read through any page session that is attached. */
  const findContextId = async (): Promise<string | undefined> => {
    for (const pending of cdpSessions) {
      const cdp = await pending;
      // A page session that closed cannot say; the next one is asked.
      const info = await cdp?.send('Target.getTargetInfo').catch(() => undefined);
      if (info?.targetInfo.browserContextId) return info.targetInfo.browserContextId;
    }
    return undefined;
  };

  const cancelByGuid = async (guid: string, bytes: number): Promise<void> => {
    const known = progressByGuid.get(guid)?.tracked;
    if (known) return cancel(known, tooLarge(bytes));
    const browser = context.browser();
    browserSession ??= browser
      ? browser.newBrowserCDPSession().catch((error: unknown) => {
          logger.warn({ err: (error as Error).message }, 'no browser session to cancel downloads by the disk watch; the saved file is still checked');
          return undefined;
        })
      : Promise.resolve(undefined);
    contextId ??= findContextId();
    const [cdp, browserContextId] = await Promise.all([browserSession, contextId]);
    if (!cdp || !browserContextId) {
      logger.warn({ guid, bytes }, 'a download past the limit could not be cancelled while it ran');
      return;
    }
    const reason = tooLarge(bytes);
    cancelledByDisk.push(reason);
    try {
      await cdp.send('Browser.cancelDownload', { guid, browserContextId });
    } catch {
      // Not a download of this context (another session's, in the same browser): not ours.
      cancelledByDisk.splice(cancelledByDisk.indexOf(reason), 1);
    }
  };

  const pendingNames = new Set<string>();
  let checking = false;
  const checkDisk = async (): Promise<void> => {
    if (checking || !opts.stagingDir) return;
    checking = true;
    try {
      while (pendingNames.size > 0) {
        const names = [...pendingNames];
        pendingNames.clear();
        for (const name of names) {
          const guid = name.replace(/\.crdownload$/, '');
          if (seenOnDisk.has(guid)) continue;
          const size = await stat(path.join(opts.stagingDir, name)).then((s) => s.size, () => 0);
          if (size <= opts.maxBytes) continue;
          seenOnDisk.add(guid);
          await cancelByGuid(guid, size);
        }
      }
    } finally {
      checking = false;
    }
  };
  let diskWatcher: FSWatcher | undefined;
  if (opts.stagingDir) {
    try {
      // Every write raises an event; checks run one at a time, on the names changed meanwhile.
      diskWatcher = watch(opts.stagingDir, (_event, name) => {
        if (!name) return;
        pendingNames.add(name);
        void checkDisk();
      });
      diskWatcher.on('error', (error) => logger.warn({ err: error }, 'the downloads folder could not be watched'));
    } catch (error) {
      logger.warn({ err: error }, 'the downloads folder could not be watched');
    }
  }

  context.on('page', watchProgress);
  context.on('response', onResponse);
  for (const page of context.pages()) watchProgress(page);

  /** Waits for the end of one download and saves or drops it; reports the outcome. */
  const settle = async (tracked: Tracked): Promise<void> => {
    const { download, id, name, url } = tracked;
    const failed = (error: string) => emit({ id, state: 'failed', url, name, error });
    try {
      const failure = await download.failure();
      if (tracked.cancelReason) return failed(tracked.cancelReason);
      if (failure) return failed(failure === 'canceled' ? (cancelledByDisk.shift() ?? 'cancelled by the page or the browser') : failure);
      await mkdir(opts.dir, { recursive: true });
      const target = path.join(opts.dir, name);
      await download.saveAs(target);
      const { size } = await stat(target);
      if (size > opts.maxBytes) {
        await rm(target, { force: true });
        return failed(tooLarge(size));
      }
      const sha256 = await hashFile(target);
      const contentType = typesByUrl.get(url) ?? contentTypeOf(name);
      logger.info({ id, name, bytes: size }, 'download saved');
      emit({ id, state: 'completed', url, name, bytes: size, sha256, contentType, path: target });
    } catch (error) {
      failed(tracked.cancelReason ?? `the download could not be saved: ${firstLine(error)}`);
    } finally {
      running.delete(tracked);
      if (tracked.progress) tracked.progress.tracked = undefined;
      // Playwright keeps its own copy until the context closes: free the disk now. A copy that
      // cannot be deleted here goes with the context.
      await download.delete().catch(() => undefined);
    }
  };

  return {
    accept(download) {
      const url = download.url();
      const tracked: Tracked = { download, id: `download-${++count}`, name: uniqueName(safeFileName(download.suggestedFilename()), taken), url };
      running.add(tracked);
      emit({ id: tracked.id, state: 'started', url, name: tracked.name });
      if (closing) cancel(tracked, 'it started after the run ended');
      else if (count > MAX_DOWNLOADS) cancel(tracked, `more than ${MAX_DOWNLOADS} downloads in one execution`);
      const index = unmatched.findIndex((p) => p.url === url && p.suggestedFilename === download.suggestedFilename());
      if (index >= 0) link(tracked, unmatched.splice(index, 1)[0]!);
      const done = settle(tracked);
      settling.add(done);
      void done.finally(() => settling.delete(done));
    },

    close() {
      closing ??= (async () => {
        context.off('page', watchProgress);
        context.off('response', onResponse);
        const graceMs = opts.graceMs ?? DEFAULT_DOWNLOAD_GRACE_MS;
        const { signal } = opts;
        if (settling.size > 0 && graceMs > 0 && !signal?.aborted) {
          const graceOver = AbortSignal.timeout(graceMs);
          await settledOrAborted(signal ? AbortSignal.any([signal, graceOver]) : graceOver, Promise.all([...settling]));
        }
        const why = signal?.aborted ? 'the run was stopped before the download finished' : `the run ended and the download did not finish within ${graceMs} ms`;
        for (const tracked of running) cancel(tracked, why);
        await Promise.all([...settling]);
        diskWatcher?.close();
        // Sessions whose page or browser went first are detached already.
        for (const session of cdpSessions) await (await session)?.detach().catch(() => undefined);
        await (await browserSession)?.detach().catch(() => undefined);
      })();
      return closing;
    },
  };
}

async function hashFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0] ?? text;
}
