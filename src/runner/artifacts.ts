import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ArtifactBody, ArtifactStore } from '../storage/types.js';
import type { Logger } from '../telemetry/types.js';

/** The files an execution leaves in its scratch folder, uploaded at the end (docs/counters-and-artifacts.md#artifacts). */
export const ARTIFACT_FILES = {
  video: { name: 'video.mp4', contentType: 'video/mp4' },
  steps: { name: 'steps.vtt', contentType: 'text/vtt; charset=utf-8' },
  logs: { name: 'logs.jsonl', contentType: 'application/x-ndjson' },
  output: { name: 'output.json', contentType: 'application/json' },
  recording: { name: 'recording.json', contentType: 'application/json' },
} as const;

export type ArtifactKind = keyof typeof ARTIFACT_FILES;

export async function writeJson(dir: string, name: string, value: unknown): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, `${JSON.stringify(value, null, 2)}\n`);
  return file;
}

/** An artifact beyond the fixed ones (a step screenshot): name relative to the execution's folder. */
export interface ExtraArtifact {
  name: string;
  path: string;
  contentType: string;
}

/** Uploads at once, at most: a run's step screenshots must not open a hundred connections. */
const EXTRA_UPLOADS_AT_ONCE = 6;

/**
 * Uploads what was made, each artifact on its own: one failing upload loses only its url.
 * Returns the url of each uploaded artifact (null where it could not be made or uploaded).
 */
export async function uploadArtifacts(options: {
  store: ArtifactStore;
  executionId: string;
  files: Partial<Record<ArtifactKind, string>>;
  extras?: readonly ExtraArtifact[];
  logger: Logger;
}): Promise<Record<ArtifactKind, string | null>> {
  const kinds = Object.keys(ARTIFACT_FILES) as ArtifactKind[];
  const urls = Object.fromEntries(kinds.map((k) => [k, null])) as Record<ArtifactKind, string | null>;
  const queue = [...(options.extras ?? [])];
  const extraWorker = async (): Promise<void> => {
    for (let next = queue.shift(); next; next = queue.shift()) await putFile(options, next.name, next.path, next.contentType);
  };
  await Promise.all([
    ...kinds.map(async (kind) => {
      const file = options.files[kind];
      if (file) urls[kind] = await putFile(options, ARTIFACT_FILES[kind].name, file, ARTIFACT_FILES[kind].contentType);
    }),
    ...Array.from({ length: Math.min(EXTRA_UPLOADS_AT_ONCE, queue.length) }, extraWorker),
  ]);
  return urls;
}

/** Stores one file; its url, or null (logged) when the store refused it. */
async function putFile(options: { store: ArtifactStore; executionId: string; logger: Logger }, name: string, file: string, contentType: string): Promise<string | null> {
  const body: ArtifactBody = { kind: 'file', path: file };
  try {
    const stored = await options.store.put(options.executionId, name, body, contentType);
    options.logger.debug({ artifact: name, key: stored.key, bytes: stored.bytes }, 'artifact uploaded');
    return stored.url;
  } catch (error) {
    options.logger.error({ artifact: name, err: error instanceof Error ? error.message : String(error) }, 'artifact upload failed');
    return null;
  }
}

/**
 * Uploads the downloads a run kept as `downloads/{name}`, each on its own like the other
 * artifacts; returns each one's url (null when it could not be stored).
 */
export async function uploadDownloads(options: {
  store: ArtifactStore;
  executionId: string;
  downloads: ReadonlyArray<{ name: string; path: string; contentType: string }>;
  logger: Logger;
}): Promise<Array<string | null>> {
  return Promise.all(options.downloads.map((download) => putFile(options, `downloads/${download.name}`, download.path, download.contentType)));
}
