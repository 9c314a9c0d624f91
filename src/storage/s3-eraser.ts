import { DeleteObjectsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { artifactKey, normalisePrefix } from './keys.js';
import { createS3Client, type S3ClientOptions } from './s3-client.js';

/**
 * Removes every artifact of an execution from the bucket: each object under
 * `{prefix}executions/{executionId}/` (docs/api.md#deleting-a-workflow), listed page by page and
 * deleted a page (at most 1,000 keys) at a time.
 */
export interface S3EraserOptions extends S3ClientOptions {
  bucket: string;
  prefix: string;
}

export function createS3Eraser(opts: S3EraserOptions): { eraseExecution(executionId: string): Promise<void>; close(): void } {
  const client = createS3Client(opts);
  const prefix = normalisePrefix(opts.prefix);
  return {
    async eraseExecution(executionId) {
      // The folder of the execution as the store names it (the id checked as the store checks it).
      const folder = artifactKey(prefix, executionId, 'x').slice(0, -1);
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: opts.bucket, Prefix: folder, ...(token ? { ContinuationToken: token } : {}) }));
        const keys = (page.Contents ?? []).flatMap((object) => (object.Key ? [{ Key: object.Key }] : []));
        if (keys.length > 0) {
          const out = await client.send(new DeleteObjectsCommand({ Bucket: opts.bucket, Delete: { Objects: keys, Quiet: true } }));
          const failed = out.Errors ?? [];
          if (failed.length > 0) throw new Error(`could not delete ${failed.length} artifacts of ${executionId}: ${failed[0]?.Code ?? ''} ${failed[0]?.Message ?? ''}`.trim());
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    },
    close() {
      client.destroy();
    },
  };
}
