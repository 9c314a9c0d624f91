import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { profileIdProblem } from '../contract/profile.js';
import { normalisePrefix } from './keys.js';
import { createS3Client, s3ErrorMessage, type S3ClientOptions } from './s3-client.js';
import type { ProfileBlobInfo, ProfileStore } from './types.js';

/**
 * Browser profiles' blobs (docs/profiles.md) beside the artifacts: `{prefix}profiles/{id}`,
 * in a local folder or an S3 bucket. Each write replaces the whole object at once (a rename
 * in the folder, one PutObject in S3), so two runs saving one profile leave one whole blob.
 */

export function profileKey(prefix: string, id: string): string {
  const problem = profileIdProblem(id);
  if (problem) throw new Error(`invalid profile id ${JSON.stringify(id)}: ${problem}`);
  return `${normalisePrefix(prefix)}profiles/${id}`;
}

export function createLocalProfileStore(opts: { dir: string; prefix: string }): ProfileStore {
  const root = path.resolve(opts.dir);
  const folder = path.join(root, ...`${normalisePrefix(opts.prefix)}profiles`.split('/'));
  const file = (id: string) => path.join(root, ...profileKey(opts.prefix, id).split('/'));
  let counter = 0;
  return {
    async read(id, signal) {
      try {
        return await readFile(file(id), signal ? { signal } : {});
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    async write(id, blob, signal) {
      const target = file(id);
      await mkdir(path.dirname(target), { recursive: true });
      // Written beside its final name and renamed into place; list() skips these `.part` files.
      const temp = `${target}.${process.pid}.${++counter}.part`;
      try {
        await writeFile(temp, blob, { mode: 0o600, ...(signal ? { signal } : {}) });
        await rename(temp, target);
      } catch (error) {
        await rm(temp, { force: true });
        throw error;
      }
    },
    async delete(id) {
      const target = file(id);
      const existed = await stat(target).then(
        () => true,
        () => false,
      );
      await rm(target, { force: true });
      return existed;
    },
    async list() {
      const names = await readdir(folder).catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? [] : Promise.reject(error)));
      const out: ProfileBlobInfo[] = [];
      for (const name of names) {
        if (name.endsWith('.part') || profileIdProblem(name)) continue;
        // A blob deleted between the listing and here is simply no longer listed.
        const info = await stat(path.join(folder, name)).catch(() => undefined);
        if (info?.isFile()) out.push({ id: name, bytes: info.size, updatedAt: info.mtime.toISOString() });
      }
      return out.sort((a, b) => a.id.localeCompare(b.id));
    },
  };
}

export type S3ProfileStore = ProfileStore & { close(): void };

export function createS3ProfileStore(opts: S3ClientOptions & { bucket: string; prefix: string }): S3ProfileStore {
  const client = createS3Client(opts);
  const { bucket } = opts;
  const folder = `${normalisePrefix(opts.prefix)}profiles/`;
  const missing = (error: unknown) => {
    const name = error instanceof Error ? error.name : '';
    const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    return name === 'NoSuchKey' || name === 'NotFound' || (status === 404 && name !== 'NoSuchBucket');
  };
  const fail = (what: string, id: string, error: unknown) => new Error(`${what} profile ${id} in s3://${bucket}/${folder}: ${s3ErrorMessage(error)}`, { cause: error });
  return {
    async read(id, signal) {
      try {
        const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: profileKey(opts.prefix, id) }), signal ? { abortSignal: signal } : {});
        return Buffer.from(await out.Body!.transformToByteArray());
      } catch (error) {
        if (missing(error)) return undefined;
        throw fail('reading', id, error);
      }
    },
    async write(id, blob, signal) {
      try {
        await client.send(new PutObjectCommand({ Bucket: bucket, Key: profileKey(opts.prefix, id), Body: blob, ContentType: 'application/octet-stream' }), signal ? { abortSignal: signal } : {});
      } catch (error) {
        throw fail('writing', id, error);
      }
    },
    async delete(id) {
      const key = profileKey(opts.prefix, id);
      try {
        const existed = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(
          () => true,
          (error: unknown) => (missing(error) ? false : Promise.reject(error)),
        );
        if (existed) await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
        return existed;
      } catch (error) {
        throw fail('deleting', id, error);
      }
    },
    async list(signal) {
      const out: ProfileBlobInfo[] = [];
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: folder, ...(token ? { ContinuationToken: token } : {}) }), signal ? { abortSignal: signal } : {});
        for (const object of page.Contents ?? []) {
          const id = (object.Key ?? '').slice(folder.length);
          if (profileIdProblem(id)) continue;
          out.push({ id, bytes: object.Size ?? 0, updatedAt: (object.LastModified ?? new Date(0)).toISOString() });
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return out.sort((a, b) => a.id.localeCompare(b.id));
    },
    close() {
      client.destroy();
    },
  };
}
