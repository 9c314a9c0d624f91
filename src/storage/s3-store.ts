import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { HeadBucketCommand } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { artifactServing } from '../domain/artifact-serving.js';
import { cancellable } from '../domain/cancel.js';
import type { Logger } from '../telemetry/types.js';
import { artifactKey, encodeKey, normalisePrefix, publicUrl } from './keys.js';
import { createS3Client, s3ErrorMessage } from './s3-client.js';
import type { ArtifactBody, ArtifactStore, StoredArtifact } from './types.js';

/**
 * Artifacts in an S3 bucket (or any S3-compatible server: MinIO, s3rver).
 *
 * Uploads go through lib-storage's `Upload`: a file is streamed from disk and cut into parts,
 * one PutObject when it fits in a part, a multipart upload otherwise. Each part is a buffer,
 * so the client's retry strategy (exponential backoff with jitter on network errors, 5xx and
 * throttling, `maxAttempts` tries in all) can resend it; a stream could not be resent.
 */

export interface S3StoreOptions {
  bucket: string;
  /** S3-compatible endpoint; none means AWS. */
  endpoint?: string;
  region: string;
  forcePathStyle: boolean;
  /** `''` or a prefix ending in `/` (one is added when missing). */
  prefix: string;
  /** When set, reported url = this + key; else the object's S3 url. */
  publicBaseUrl?: string;
  /** Tries per request, first included. Default 5. */
  maxAttempts?: number;
  /** Explicit credentials (tests); none means the standard AWS provider chain. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** Part size of multipart uploads, ≥ 5 MiB (S3's minimum). Default 8 MiB. */
  partSizeBytes?: number;
  logger: Logger;
}

const DEFAULT_MAX_ATTEMPTS = 5;
const DEFAULT_PART_SIZE_BYTES = 8 * 1024 * 1024;
const MIN_PART_SIZE_BYTES = 5 * 1024 * 1024;

export type S3Store = ArtifactStore & {
  /** The underlying client's sockets are released; idempotent. */
  close(): void;
};

export function createS3Store(opts: S3StoreOptions): S3Store {
  const prefix = normalisePrefix(opts.prefix);
  const logger = opts.logger.child({ component: 's3-store', bucket: opts.bucket });
  const client = createS3Client({
    region: opts.region,
    forcePathStyle: opts.forcePathStyle,
    maxAttempts: opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
    ...(opts.credentials ? { credentials: opts.credentials } : {}),
  });
  const partSize = Math.max(MIN_PART_SIZE_BYTES, opts.partSizeBytes ?? DEFAULT_PART_SIZE_BYTES);
  let closed = false;

  const objectUrl = (key: string): string => {
    if (opts.publicBaseUrl) return publicUrl(opts.publicBaseUrl, key);
    return s3ObjectUrl({ bucket: opts.bucket, key, region: opts.region, forcePathStyle: opts.forcePathStyle, endpoint: opts.endpoint });
  };

  return {
    async put(executionId: string, name: string, body: ArtifactBody, contentType: string, signal?: AbortSignal): Promise<StoredArtifact> {
      signal?.throwIfAborted();
      const key = artifactKey(prefix, executionId, name);
      const bytes = body.kind === 'buffer' ? Buffer.byteLength(body.data) : (await stat(body.path)).size;
      // A page's download keeps its type in output.json, never on the object: a browser opening
      // the object's url saves it instead of rendering it (docs/operations.md#browser-security).
      const serving = artifactServing(name);
      const upload = new Upload({
        client,
        params: {
          Bucket: opts.bucket,
          Key: key,
          Body: body.kind === 'buffer' ? body.data : createReadStream(body.path),
          ContentType: serving.disposition ? serving.contentType : contentType,
          ...(serving.disposition ? { ContentDisposition: serving.disposition } : {}),
        },
        partSize,
        // Two parts in flight: enough to keep a link busy on a 2-core worker.
        queueSize: 2,
        leavePartsOnError: false,
      });
      // Stopped with the run: the parts in flight are abandoned and a multipart upload is aborted.
      const abort = () => void upload.abort().catch((error: unknown) => logger.warn({ key, err: s3ErrorMessage(error) }, 'could not abort an artifact upload'));
      const started = performance.now();
      try {
        await (signal ? cancellable(signal, () => upload.done(), abort) : upload.done());
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        logger.warn({ key, bytes, err: s3ErrorMessage(error) }, 'artifact upload failed');
        throw new Error(`uploading s3://${opts.bucket}/${key} failed: ${s3ErrorMessage(error)}`, { cause: error });
      }
      logger.debug({ key, bytes, durationMs: Math.round(performance.now() - started) }, 'artifact uploaded');
      return { key, url: objectUrl(key), bytes };
    },

    async checkReady(signal: AbortSignal): Promise<void> {
      await client.send(new HeadBucketCommand({ Bucket: opts.bucket }), { abortSignal: signal });
    },

    close(): void {
      if (closed) return;
      closed = true;
      client.destroy();
    },
  };
}

/**
 * The object's own S3 url: path-style `{endpoint}/{bucket}/{key}`, or virtual-hosted
 * `{scheme}//{bucket}.{host}/{key}`; AWS's regional endpoint when none is configured.
 */
export function s3ObjectUrl(o: { bucket: string; key: string; region: string; forcePathStyle: boolean; endpoint?: string }): string {
  const endpoint = new URL(o.endpoint ?? `https://s3.${o.region}.amazonaws.com`);
  const base = endpoint.href.replace(/\/+$/, '');
  const key = encodeKey(o.key);
  if (o.forcePathStyle) return `${base}/${encodeURIComponent(o.bucket)}/${key}`;
  const path = endpoint.pathname.replace(/\/+$/, '');
  return `${endpoint.protocol}//${o.bucket}.${endpoint.host}${path}/${key}`;
}
