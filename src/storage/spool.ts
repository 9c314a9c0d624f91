import { copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { spoolEntry, type SpoolEntry } from '../contract/spool.js';
import { formatIssues } from '../contract/json.js';
import type { Logger } from '../telemetry/types.js';
import type { ArtifactBody, ArtifactStore, StoredArtifact } from './types.js';

/**
 * Nothing recorded is lost to a storage outage. An artifact the store refuses (after its own
 * retries) is kept in a local spool and uploaded later, in the background and after a restart;
 * the put itself still fails, so the execution's report is not held back: it goes out with a
 * null url for that artifact, and the upload happens whenever storage is back.
 */
export interface SpoolingStore extends ArtifactStore {
  /** Artifacts waiting in the spool. */
  depth(): number;
  /** Uploads what an earlier process left in the spool; call once at start. */
  resume(): Promise<void>;
  close(): Promise<void>;
}

export function createSpoolingStore(options: { inner: ArtifactStore; dir: string; logger: Logger; retryEveryMs?: number; onRetry?: () => void }): SpoolingStore {
  const { inner, logger } = options;
  const retryEveryMs = options.retryEveryMs ?? 30_000;
  const spooled = new Map<string, SpoolEntry>();
  const stop = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let round: Promise<void> | undefined;

  const metaOf = (file: string) => `${file}.meta.json`;

  async function spool(executionId: string, name: string, body: ArtifactBody, contentType: string): Promise<void> {
    const folder = path.join(options.dir, encodeURIComponent(executionId));
    const file = path.join(folder, name);
    // Names may hold a sub-folder (`steps/001.jpg`).
    await mkdir(path.dirname(file), { recursive: true });
    if (body.kind === 'file') await copyFile(body.path, file);
    else await writeFile(file, body.data);
    const entry: SpoolEntry = { executionId, name, contentType, file };
    await writeFile(metaOf(file), JSON.stringify(entry));
    spooled.set(file, entry);
    schedule();
  }

  function schedule(): void {
    if (timer || stop.signal.aborted || spooled.size === 0) return;
    timer = setTimeout(() => {
      timer = undefined;
      round = retryAll().finally(() => {
        round = undefined;
        schedule();
      });
    }, retryEveryMs);
    timer.unref();
  }

  async function retryAll(): Promise<void> {
    for (const [file, entry] of [...spooled]) {
      if (stop.signal.aborted) return;
      try {
        options.onRetry?.();
        const stored = await inner.put(entry.executionId, entry.name, { kind: 'file', path: file }, entry.contentType, stop.signal);
        await rm(metaOf(file), { force: true });
        await rm(file, { force: true });
        spooled.delete(file);
        logger.info({ executionId: entry.executionId, artifact: entry.name, key: stored.key }, 'spooled artifact uploaded');
      } catch (error) {
        logger.warn({ executionId: entry.executionId, artifact: entry.name, err: String(error) }, 'spooled artifact still not uploaded');
      }
    }
  }

  return {
    async put(executionId, name, body, contentType, signal): Promise<StoredArtifact> {
      try {
        return await inner.put(executionId, name, body, contentType, signal);
      } catch (error) {
        await spool(executionId, name, body, contentType).catch((spoolError: unknown) =>
          logger.error({ executionId, artifact: name, err: String(spoolError) }, 'artifact could not be kept for a later upload: it is lost'),
        );
        logger.error({ executionId, artifact: name, err: String(error) }, 'artifact upload failed; kept locally for a later upload, reported with a null url');
        throw error;
      }
    },
    checkReady: inner.checkReady ? (signal) => inner.checkReady!(signal) : undefined,
    depth: () => spooled.size,
    async resume() {
      await mkdir(options.dir, { recursive: true });
      for (const folder of await readdir(options.dir)) {
        const full = path.join(options.dir, folder);
        for (const name of await readdir(full, { recursive: true }).catch(() => [] as string[])) {
          if (!name.endsWith('.meta.json')) continue;
          try {
            const entry = readSpoolEntry(await readFile(path.join(full, name), 'utf8'));
            spooled.set(entry.file, entry);
          } catch (error) {
            logger.error({ file: name, err: String(error) }, 'unreadable spool entry left in place');
          }
        }
      }
      if (spooled.size > 0) logger.warn({ pending: spooled.size }, 'artifacts left by an earlier run will be uploaded');
      schedule();
    },
    async close() {
      stop.abort();
      if (timer) clearTimeout(timer);
      await round;
    },
  };
}

/** A spool entry read back; throws, saying what is wrong, when the text is not one. */
export function readSpoolEntry(text: string): SpoolEntry {
  const read = spoolEntry.safeParse(JSON.parse(text));
  if (!read.success) throw new Error(`not a spool entry: ${formatIssues(read.error.issues)}`);
  return read.data;
}
