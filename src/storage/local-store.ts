import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { artifactKey, normalisePrefix, publicUrl } from './keys.js';
import type { ArtifactBody, ArtifactStore, StoredArtifact } from './types.js';

/**
 * Artifacts in a local folder (`ARTIFACTS_DIR`) when no bucket is configured, with the S3
 * layout. Each file is written beside its final name and renamed into place, so a reader never
 * sees half an artifact.
 */

export interface LocalStoreOptions {
  dir: string;
  prefix: string;
  /** When set, reported url = this + key; else a `file://` url. */
  publicBaseUrl?: string;
}

export function createLocalStore(opts: LocalStoreOptions): ArtifactStore {
  const root = path.resolve(opts.dir);
  const prefix = normalisePrefix(opts.prefix);
  let tempCounter = 0;

  return {
    async put(executionId: string, name: string, body: ArtifactBody, _contentType: string, signal?: AbortSignal): Promise<StoredArtifact> {
      signal?.throwIfAborted();
      const key = artifactKey(prefix, executionId, name);
      const target = path.join(root, ...key.split('/'));
      // Belt and braces: the key checks already forbid this.
      if (!target.startsWith(root + path.sep)) throw new Error(`artifact key ${key} escapes ${root}`);
      await mkdir(path.dirname(target), { recursive: true });
      const temp = `${target}.${process.pid}.${++tempCounter}.part`;
      try {
        if (body.kind === 'buffer') {
          await writeFile(temp, body.data, signal ? { signal } : {});
        } else {
          await pipeline(createReadStream(body.path), createWriteStream(temp), signal ? { signal } : {});
        }
        await rename(temp, target);
      } catch (error) {
        await rm(temp, { force: true });
        if (signal?.aborted) throw signal.reason;
        throw error;
      }
      const { size } = await stat(target);
      const url = opts.publicBaseUrl ? publicUrl(opts.publicBaseUrl, key) : pathToFileURL(target).href;
      return { key, url, bytes: size };
    },

    async checkReady(signal: AbortSignal): Promise<void> {
      signal.throwIfAborted();
      await mkdir(root, { recursive: true });
      // Proves the folder is writable, not only present.
      const probe = path.join(root, `.ready-${process.pid}-${++tempCounter}`);
      await writeFile(probe, '');
      await rm(probe, { force: true });
    },
  };
}
