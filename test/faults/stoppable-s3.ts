import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { s3Credentials } from '../support/s3.js';

/**
 * An s3rver that can be stopped and started again on the same port with the same objects:
 * a storage outage. (test/support/s3.ts deletes its folder on stop, so it cannot come back.)
 */
export interface StoppableS3 {
  endpoint: string;
  bucket: string;
  /** Stops answering: the port is closed and open connections are cut. */
  stop(): Promise<void>;
  /** Listens again on the same port, with what was stored before. */
  start(): Promise<void>;
  /** The object's bytes, or undefined when it does not exist. */
  object(key: string): Promise<Buffer | undefined>;
  /** Stops and removes the storage folder; idempotent. */
  close(): Promise<void>;
}

interface S3rverInstance {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
  httpServer?: { closeAllConnections?(): void };
}
type S3rverConstructor = new (options: Record<string, unknown>) => S3rverInstance;

const require = createRequire(import.meta.url);

export async function startStoppableS3(bucket = 'artifacts'): Promise<StoppableS3> {
  const S3rver = require('s3rver') as S3rverConstructor;
  const dir = await mkdtemp(path.join(os.tmpdir(), 's3rver-faults-'));
  let port = 0;
  let server: S3rverInstance | undefined;
  const run = async () => {
    const instance = new S3rver({ address: '127.0.0.1', port, directory: dir, silent: true, resetOnClose: false, configureBuckets: [{ name: bucket }] });
    port = (await instance.run()).port;
    server = instance;
  };
  const stop = async () => {
    const current = server;
    server = undefined;
    if (!current) return;
    const closed = current.close();
    current.httpServer?.closeAllConnections?.();
    await closed;
  };
  await run();
  const endpoint = `http://127.0.0.1:${port}`;
  let closing: Promise<void> | undefined;
  return {
    endpoint,
    bucket,
    stop,
    start: async () => {
      if (!server) await run();
    },
    async object(key) {
      const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: s3Credentials });
      try {
        const res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return Buffer.from(await res.Body!.transformToByteArray());
      } catch (error) {
        if ((error as { name?: string }).name === 'NoSuchKey') return undefined;
        throw error;
      } finally {
        client.destroy();
      }
    },
    close() {
      closing ??= (async () => {
        await stop();
        await rm(dir, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}
