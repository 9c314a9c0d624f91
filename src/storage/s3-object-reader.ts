import { GetObjectCommand } from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import type { Logger } from '../telemetry/types.js';
import { createS3Client, s3ErrorMessage, type S3ClientOptions } from './s3-client.js';
import type { ObjectReader } from './types.js';

/**
 * Input files from S3 (docs/files-and-codes.md): `s3://bucket/key` read with the worker's S3 settings and
 * the standard credentials chain, whether or not artifacts go to S3. The body is handed over as
 * a stream; the runner bounds its size and hashes it as it writes it to disk.
 */
export type S3ObjectReader = ObjectReader & {
  /** Releases the client's sockets; idempotent. */
  close(): void;
};

export function createS3ObjectReader(opts: Omit<S3ClientOptions, 'maxAttempts'> & { maxAttempts?: number; logger: Logger }): S3ObjectReader {
  const { logger, ...clientOptions } = opts;
  // Created on first use: most workers never see an s3:// input file.
  let client: ReturnType<typeof createS3Client> | undefined;
  let closed = false;
  return {
    async open(bucket, key, signal) {
      if (closed) return { ok: false, reason: 'the worker is shutting down' };
      client ??= createS3Client({ maxAttempts: 3, ...clientOptions });
      try {
        const response = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: signal });
        const body = response.Body as Readable | undefined;
        if (!body) return { ok: false, reason: 'S3 returned no body' };
        return {
          ok: true,
          body,
          ...(response.ContentLength !== undefined ? { contentLength: response.ContentLength } : {}),
          ...(response.ContentType ? { contentType: response.ContentType } : {}),
          close: () => body.destroy(),
        };
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        logger.debug({ bucket, key, err: s3ErrorMessage(error) }, 'input file not readable from S3');
        return { ok: false, reason: describe(error) };
      }
    },
    close() {
      if (closed) return;
      closed = true;
      client?.destroy();
    },
  };
}

/** A reason the producer can act on: missing, forbidden, or what S3 said. */
function describe(error: unknown): string {
  const name = error instanceof Error ? error.name : '';
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  if (name === 'NoSuchKey' || (status === 404 && name !== 'NoSuchBucket')) return 'no such object in S3';
  if (name === 'NoSuchBucket') return 'no such bucket in S3';
  if (name === 'AccessDenied' || status === 403) return 'the worker may not read this object (access denied)';
  return `S3 could not be read: ${s3ErrorMessage(error)}`;
}
