/**
 * File choosers and file inputs of a session's pages (docs/files-and-codes.md). Every page's file chooser
 * is intercepted (Playwright's `filechooser` event: no native dialog ever opens) and held until
 * the agent chooses files for it; the agent may also fill the file input at a point. Files are
 * chosen by name among the execution's input files, and this module is the only place that turns
 * a name into a path: no other path of the worker's disk can reach a page, whatever the caller.
 */
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import type { BrowserContext, ElementHandle, FileChooser, Page } from 'playwright-core';

import type { Logger } from '../telemetry/types.js';
import type { FileChooserEvent, FileInputResult, FileInputTarget, StagedFile } from './types.js';
import { waitUntil } from './wait-until.js';

export interface FileChooserTracker {
  /** The chooser `page` opened and nobody answered, if any. */
  pending(page: Page): FileChooserEvent | undefined;
  /** Resolves when `page` has a pending chooser (true), or after `ms` or on abort without one (false). */
  whenPending(page: Page, ms: number, signal: AbortSignal): Promise<boolean>;
  /** Gives the named input files to `page`'s pending chooser or to its file input at a point. */
  setFiles(page: Page, names: readonly string[], target: FileInputTarget): Promise<FileInputResult>;
  /**
   * Gives the named input files to a file input found otherwise (an element `ref` of the
   * toolset): the element must be an `<input type=file>` or a label of one.
   */
  setFilesOn(page: Page, element: ElementHandle, names: readonly string[]): Promise<FileInputResult>;
}

export function attachFileChoosers(
  context: BrowserContext,
  opts: { files: readonly StagedFile[]; onOpened?: (event: FileChooserEvent) => void; logger: Logger },
): FileChooserTracker {
  const choosers = new Map<Page, FileChooser>();
  const waiters = new Set<() => void>();

  const watch = (page: Page): void => {
    // Listening is what makes Playwright intercept the chooser instead of letting it open.
    page.on('filechooser', (chooser) => {
      choosers.set(page, chooser);
      for (const wake of [...waiters]) wake();
      const event = { multiple: chooser.isMultiple(), url: page.url() };
      opts.logger.debug(event, 'file chooser opened');
      opts.onOpened?.(event);
    });
    // A new document has new inputs: a chooser of the old one can no longer be answered.
    page.on('framenavigated', (frame) => {
      if (frame === page.mainFrame()) choosers.delete(page);
    });
    page.on('close', () => choosers.delete(page));
  };
  context.on('page', watch);
  for (const page of context.pages()) watch(page);

  /** The staged paths of `names`, each checked on disk; or why one cannot be given. */
  const resolve = async (names: readonly string[]): Promise<{ ok: true; paths: string[]; names: string[] } | { ok: false; error: string }> => {
    if (names.length === 0) return { ok: false, error: 'name at least one input file' };
    const offered = opts.files.map((f) => f.name);
    const paths: string[] = [];
    const chosen: string[] = [];
    for (const name of names) {
      const file = opts.files.find((f) => f.name === name) ?? opts.files.find((f) => f.name.toLowerCase() === String(name).toLowerCase());
      if (!file) {
        const choice = offered.length > 0 ? `the input files are: ${offered.join(', ')}` : 'this execution has no input files';
        return { ok: false, error: `${JSON.stringify(name)} is not an input file; ${choice}` };
      }
      // Only a regular file at its own real path: a link swapped in could point anywhere.
      // A file that cannot be read this way is refused below, with the reason.
      const info = await lstat(file.path).catch(() => undefined);
      const real = await realpath(file.path).catch(() => undefined);
      if (!info?.isFile() || !path.isAbsolute(file.path) || real !== path.resolve(file.path)) {
        return { ok: false, error: `the input file ${JSON.stringify(file.name)} is no longer available` };
      }
      paths.push(file.path);
      chosen.push(file.name);
    }
    return { ok: true, paths, names: chosen };
  };

  return {
    pending(page) {
      const chooser = choosers.get(page);
      return chooser ? { multiple: chooser.isMultiple(), url: page.url() } : undefined;
    },

    whenPending(page, ms, signal) {
      return waitUntil(() => choosers.has(page), waiters, ms, signal);
    },

    setFiles(page, names, target) {
      return give(page, names, async (paths) => {
        if (target.kind === 'point') {
          const input = await fileInputAt(page, target.x, target.y);
          if (!input) return { ok: false, error: `there is no file input at (${target.x}, ${target.y})` };
          // A handle whose document is gone is released with it.
          return fill(input, paths).finally(() => input.dispose().catch(() => undefined));
        }
        const chooser = choosers.get(page);
        if (!chooser) return { ok: false, error: 'no file chooser is open: click the page’s upload control first, or name the file input’s position' };
        if (paths.length > 1 && !chooser.isMultiple()) return { ok: false, error: 'this file chooser takes one file' };
        if (!(await chooser.element().evaluate((e) => e.isConnected).catch(() => false))) {
          choosers.delete(page);
          return { ok: false, error: 'the file chooser’s input is gone (the page changed); open it again' };
        }
        await chooser.setFiles(paths);
        return undefined;
      });
    },

    setFilesOn(page, element, names) {
      return give(page, names, async (paths) => {
        const handle = await element.evaluateHandle((e) => (e instanceof HTMLLabelElement ? e.control : e));
        try {
          const input = handle.asElement() as ElementHandle<HTMLInputElement> | null;
          if (!input || !(await input.evaluate((e) => e instanceof HTMLInputElement && e.type === 'file'))) return { ok: false, error: 'that element is not a file input' };
          return await fill(input, paths);
        } finally {
          // A handle whose document is gone is released with it.
          await handle.dispose().catch(() => undefined);
        }
      });
    },
  };

  /**
   * Resolves the names, lets `put` give the paths to the page (a result when it refuses), and
   * clears the page's pending chooser once given: a page error is a refusal, a closed page throws.
   */
  async function give(page: Page, names: readonly string[], put: (paths: string[]) => Promise<FileInputResult | undefined>): Promise<FileInputResult> {
    const files = await resolve(names);
    if (!files.ok) return files;
    try {
      const refused = await put(files.paths);
      if (refused) return refused;
    } catch (error) {
      if (page.isClosed()) throw error;
      return { ok: false, error: `the files could not be set: ${firstLine(error)}` };
    }
    choosers.delete(page);
    return { ok: true, names: files.names };
  }
}

/** Sets the files of a file input; a refusal (one input, several files) comes back as a result. */
async function fill(input: ElementHandle<HTMLInputElement>, paths: string[]): Promise<FileInputResult | undefined> {
  if (paths.length > 1 && !(await input.evaluate((e) => e.multiple))) return { ok: false, error: 'this file input takes one file' };
  await input.setInputFiles(paths);
  return undefined;
}

/** The `<input type=file>` at a viewport point: itself, the control of a label there, or none. */
async function fileInputAt(page: Page, x: number, y: number): Promise<ElementHandle<HTMLInputElement> | undefined> {
  const handle = await page.evaluateHandle(
    ({ x, y }) => {
      const isFileInput = (e: Element | null | undefined): e is HTMLInputElement => e instanceof HTMLInputElement && e.type === 'file';
      const hit = document.elementFromPoint(x, y);
      if (!hit) return null;
      if (isFileInput(hit)) return hit;
      const label = hit.closest('label');
      if (label && isFileInput(label.control)) return label.control;
      return null;
    },
    { x, y },
  );
  const element = handle.asElement() as ElementHandle<HTMLInputElement> | null;
  if (!element) {
    await handle.dispose();
    return undefined;
  }
  return element;
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0] ?? text;
}
