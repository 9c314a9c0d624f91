import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalStore } from '../../src/storage/local-store.js';
import { createS3Store, s3ObjectUrl, type S3Store } from '../../src/storage/s3-store.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { s3Credentials, startS3, type TestS3 } from '../support/s3.js';

const logger = createSilentLogger();
const EXECUTION = '3f0c9a52-5d7e-4b8e-9d0a-1c2b3a4d5e6f';

const TRAVERSALS: Array<[executionId: string, name: string]> = [
  [EXECUTION, '../escape.txt'],
  [EXECUTION, 'a/../../escape.txt'],
  [EXECUTION, '/etc/passwd'],
  [EXECUTION, 'a\\..\\b.txt'],
  [EXECUTION, ''],
  ['..', 'logs.jsonl'],
  ['a/b', 'logs.jsonl'],
  [EXECUTION, 'bad\u0000name'],
];

let work: string;
beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'artifact-stores-'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('local store', () => {
  it('writes a buffer under {prefix}executions/{id}/{name} and reports a file:// url', async () => {
    const dir = path.join(work, 'local-a');
    const store = createLocalStore({ dir, prefix: 'dev/' });
    const stored = await store.put(EXECUTION, 'output.json', { kind: 'buffer', data: '{"status":"completed"}' }, 'application/json');
    expect(stored.key).toBe(`dev/executions/${EXECUTION}/output.json`);
    expect(stored.bytes).toBe(22);
    expect(stored.url.startsWith('file://')).toBe(true);
    const onDisk = fileURLToPath(stored.url);
    expect(onDisk).toBe(path.join(dir, 'dev', 'executions', EXECUTION, 'output.json'));
    expect(await readFile(onDisk, 'utf8')).toBe('{"status":"completed"}');
  });

  it('copies a file and reports publicBaseUrl + key when set', async () => {
    const source = path.join(work, 'video-source.mp4');
    const content = Buffer.alloc(300_000, 7);
    await writeFile(source, content);
    const store = createLocalStore({ dir: path.join(work, 'local-b'), prefix: '', publicBaseUrl: 'https://cdn.example.com/artifacts/' });
    const stored = await store.put(EXECUTION, 'video.mp4', { kind: 'file', path: source }, 'video/mp4');
    expect(stored).toEqual({
      key: `executions/${EXECUTION}/video.mp4`,
      url: `https://cdn.example.com/artifacts/executions/${EXECUTION}/video.mp4`,
      bytes: content.length,
    });
    expect((await stat(path.join(work, 'local-b', 'executions', EXECUTION, 'video.mp4'))).size).toBe(content.length);
  });

  it('overwrites an artifact written again', async () => {
    const store = createLocalStore({ dir: path.join(work, 'local-c'), prefix: '' });
    await store.put(EXECUTION, 'logs.jsonl', { kind: 'buffer', data: 'first\n' }, 'application/x-ndjson');
    const stored = await store.put(EXECUTION, 'logs.jsonl', { kind: 'buffer', data: 'second\n' }, 'application/x-ndjson');
    expect(await readFile(fileURLToPath(stored.url), 'utf8')).toBe('second\n');
  });

  it.each(TRAVERSALS)('rejects execution %j with name %j', async (executionId, name) => {
    const dir = path.join(work, 'local-d');
    const store = createLocalStore({ dir, prefix: '' });
    await expect(store.put(executionId, name, { kind: 'buffer', data: 'x' }, 'text/plain')).rejects.toThrow(/invalid artifact/);
  });

  it('rejects a prefix that climbs out of the folder', () => {
    expect(() => createLocalStore({ dir: path.join(work, 'local-e'), prefix: '../up/' })).toThrow(/invalid artifact prefix/);
  });

  it('is ready when its folder is writable', async () => {
    const store = createLocalStore({ dir: path.join(work, 'local-f', 'nested'), prefix: '' });
    await expect(store.checkReady!(new AbortController().signal)).resolves.toBeUndefined();
  });
});

describe('S3 object urls', () => {
  const key = `p/executions/${EXECUTION}/video.mp4`;
  it.each([
    [{ forcePathStyle: true, endpoint: 'http://127.0.0.1:9000' }, `http://127.0.0.1:9000/bucket/${key}`],
    [{ forcePathStyle: false, endpoint: 'https://minio.internal:9000' }, `https://bucket.minio.internal:9000/${key}`],
    [{ forcePathStyle: false }, `https://bucket.s3.eu-west-1.amazonaws.com/${key}`],
    [{ forcePathStyle: true }, `https://s3.eu-west-1.amazonaws.com/bucket/${key}`],
  ])('%j → %s', (o, expected) => {
    expect(s3ObjectUrl({ bucket: 'bucket', key, region: 'eu-west-1', ...o })).toBe(expected);
  });
});

describe('S3 store against s3rver', () => {
  let s3: TestS3;
  let reader: S3Client;
  const stores: S3Store[] = [];

  beforeAll(async () => {
    s3 = await startS3('exec-artifacts');
    reader = new S3Client({ region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, credentials: s3Credentials });
  });
  afterAll(async () => {
    for (const store of stores) store.close();
    reader?.destroy();
    await s3?.stop();
  });

  const makeStore = (extra: { prefix?: string; publicBaseUrl?: string; bucket?: string } = {}) => {
    const store = createS3Store({
      bucket: extra.bucket ?? s3.bucket,
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      prefix: extra.prefix ?? 'ci/',
      ...(extra.publicBaseUrl ? { publicBaseUrl: extra.publicBaseUrl } : {}),
      credentials: s3Credentials,
      maxAttempts: 2,
      // S3's smallest part, so a 6 MiB file needs two.
      partSizeBytes: 5 * 1024 * 1024,
      logger,
    });
    stores.push(store);
    return store;
  };

  const getObject = async (key: string) => {
    const out = await reader.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
    return { body: Buffer.from(await out.Body!.transformToByteArray()), contentType: out.ContentType };
  };

  it('puts a buffer with its content type and reports the path-style url', async () => {
    const store = makeStore();
    const stored = await store.put(EXECUTION, 'output.json', { kind: 'buffer', data: '{"ok":true}' }, 'application/json');
    expect(stored).toEqual({
      key: `ci/executions/${EXECUTION}/output.json`,
      url: `${s3.endpoint}/${s3.bucket}/ci/executions/${EXECUTION}/output.json`,
      bytes: 11,
    });
    const object = await getObject(stored.key);
    expect(object.body.toString()).toBe('{"ok":true}');
    expect(object.contentType).toBe('application/json');
    // The reported url is the object itself.
    const viaUrl = await fetch(stored.url);
    expect(viaUrl.status).toBe(200);
    expect(await viaUrl.text()).toBe('{"ok":true}');
  });

  it('streams a file larger than one part as a multipart upload', async () => {
    const source = path.join(work, 'big.bin');
    const content = Buffer.alloc(6 * 1024 * 1024 + 12_345);
    for (let i = 0; i < content.length; i += 4096) content[i] = i % 251;
    await writeFile(source, content);
    const store = makeStore({ publicBaseUrl: 'https://artifacts.example.com' });
    const stored = await store.put(EXECUTION, 'video.mp4', { kind: 'file', path: source }, 'video/mp4');
    expect(stored).toEqual({
      key: `ci/executions/${EXECUTION}/video.mp4`,
      url: `https://artifacts.example.com/ci/executions/${EXECUTION}/video.mp4`,
      bytes: content.length,
    });
    const head = await reader.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: stored.key }));
    expect(head.ContentType).toBe('video/mp4');
    expect(head.ContentLength).toBe(content.length);
    const calls = s3.requests.filter((r) => r.includes('/video.mp4'));
    expect(calls.some((r) => r.startsWith('POST ') && /[?&]uploads\b/.test(r))).toBe(true);
    expect(calls.some((r) => r.startsWith('PUT ') && /partNumber=2/.test(r))).toBe(true);
    expect((await getObject(stored.key)).body.equals(content)).toBe(true);
  });

  it('puts a small file in one request', async () => {
    const source = path.join(work, 'logs.jsonl');
    await writeFile(source, '{"event":"started"}\n');
    const stored = await makeStore({ prefix: '' }).put(EXECUTION, 'logs.jsonl', { kind: 'file', path: source }, 'application/x-ndjson');
    expect(stored.key).toBe(`executions/${EXECUTION}/logs.jsonl`);
    const object = await getObject(stored.key);
    expect(object.body.toString()).toBe('{"event":"started"}\n');
    expect(object.contentType).toBe('application/x-ndjson');
  });

  it('stores a page download as an attachment, never with the type the page gave', async () => {
    const stored = await makeStore().put(EXECUTION, 'downloads/evil.svg', { kind: 'buffer', data: '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>' }, 'text/html');
    const head = await reader.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: stored.key }));
    expect(head.ContentType).toBe('application/octet-stream');
    expect(head.ContentDisposition).toMatch(/^attachment; filename="evil\.svg"/);
  });

  it.each(TRAVERSALS)('rejects execution %j with name %j', async (executionId, name) => {
    await expect(makeStore().put(executionId, name, { kind: 'buffer', data: 'x' }, 'text/plain')).rejects.toThrow(/invalid artifact/);
  });

  it('is ready when the bucket exists, and not when it does not', async () => {
    await expect(makeStore().checkReady!(new AbortController().signal)).resolves.toBeUndefined();
    await expect(makeStore({ bucket: 'no-such-bucket' }).checkReady!(new AbortController().signal)).rejects.toThrow();
  });

  it('fails an upload to a missing bucket with an error naming the object', async () => {
    const store = makeStore({ bucket: 'no-such-bucket' });
    await expect(store.put(EXECUTION, 'output.json', { kind: 'buffer', data: '{}' }, 'application/json')).rejects.toThrow(
      /uploading s3:\/\/no-such-bucket\/ci\/executions\/.*\/output\.json failed/,
    );
  });

  it('rejects with the signal reason when aborted', async () => {
    const controller = new AbortController();
    const reason = new Error('shutting down');
    controller.abort(reason);
    await expect(makeStore().put(EXECUTION, 'output.json', { kind: 'buffer', data: '{}' }, 'application/json', controller.signal)).rejects.toBe(reason);
  });
});
