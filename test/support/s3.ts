import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';

/**
 * The S3 protocol over HTTP for integration tests: an `s3rver` on 127.0.0.1 with one bucket,
 * storing objects in a temporary folder removed by `stop`.
 */

/** Credentials to give the S3 client explicitly (s3rver checks signatures against these). */
export const s3Credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

export interface TestS3 {
  /** `http://127.0.0.1:{port}`: use with `forcePathStyle: true`. */
  endpoint: string;
  bucket: string;
  /** s3rver's storage folder. */
  dir: string;
  /** `METHOD /path?query` of every request received, to check how a client talked. */
  requests: string[];
  stop(): Promise<void>;
}

/** The part of s3rver's API we use (the package ships no types). */
interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
  httpServer?: {
    closeAllConnections?(): void;
    on(event: 'request', listener: (req: { method?: string; url?: string }) => void): void;
  };
}
type S3rverConstructor = new (options: {
  address: string;
  port: number;
  directory: string;
  silent: boolean;
  resetOnClose: boolean;
  configureBuckets: Array<{ name: string }>;
}) => S3rverInstance;

const require = createRequire(import.meta.url);

export async function startS3(bucket = 'artifacts'): Promise<TestS3> {
  const S3rver = require('s3rver') as S3rverConstructor;
  const dir = await mkdtemp(path.join(os.tmpdir(), 's3rver-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    directory: dir,
    silent: true,
    resetOnClose: false,
    configureBuckets: [{ name: bucket }],
  });
  let address: AddressInfo;
  try {
    address = await server.run();
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const requests: string[] = [];
  server.httpServer?.on('request', (req) => requests.push(`${req.method ?? ''} ${req.url ?? ''}`));
  let stopping: Promise<void> | undefined;
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    bucket,
    dir,
    requests,
    stop() {
      stopping ??= (async () => {
        try {
          const closed = server.close();
          // Clients keep idle sockets open (keep-alive); without this, close waits for them.
          server.httpServer?.closeAllConnections?.();
          await closed;
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      })();
      return stopping;
    },
  };
}
