import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ExecutionError } from '../contract/errors.js';
import { contentTypeOf } from '../domain/file-names.js';
import { shownUrl, type InputFile, type InputFileRef } from '../domain/input-files.js';
import type { ExecutionEventSink } from '../execution/events.js';
import type { RunnerDeps } from './types.js';

/**
 * Fetches an execution's input files (docs/files-and-codes.md) into its scratch folder before `started`.
 * Every check that needs no network runs first, for all files; then each file is fetched in turn,
 * bounded in size and time, hashed as it is written. Any failure is `invalid_input` naming the
 * file's place in the payload and the reason; nothing has run yet.
 */
export async function stageInputFiles(options: {
  refs: readonly InputFileRef[];
  deps: Pick<RunnerDeps, 'openInputFile' | 'checkFileUrl' | 'settings'>;
  allowedDomains: readonly string[];
  dir: string;
  events: ExecutionEventSink;
  signal: AbortSignal;
}): Promise<InputFile[]> {
  const { refs, deps, allowedDomains, events } = options;
  if (refs.length === 0) return [];
  const { inputFileBuckets, inputFileMaxBytes, inputFileTimeoutMs } = deps.settings;
  for (const ref of refs) {
    if (ref.scheme === 's3') {
      const bucket = new URL(ref.url).hostname;
      if (!inputFileBuckets.includes(bucket)) {
        throw fault(ref, inputFileBuckets.length === 0 ? 'this worker reads no s3:// input files (INPUT_FILE_BUCKETS is empty)' : `the bucket "${bucket}" is not one input files are read from (INPUT_FILE_BUCKETS)`);
      }
    } else {
      const verdict = deps.checkFileUrl(ref.url, allowedDomains);
      if (!verdict.ok) throw fault(ref, `not fetched: ${verdict.reason}`);
    }
  }

  await mkdir(options.dir, { recursive: true });
  const files: InputFile[] = [];
  for (const ref of refs) {
    const target = path.join(options.dir, ref.name);
    // The file's own deadline, and the execution's signal (shutdown) above it.
    const signal = AbortSignal.any([options.signal, AbortSignal.timeout(inputFileTimeoutMs)]);
    const onBlocked = (blocked: { url: string; layer: string; reason: string }) => events.emit('blocked', { ...blocked, url: shownUrl(blocked.url), for: 'input_file' });
    let fetched: { bytes: number; sha256: string; contentType: string };
    try {
      fetched = await fetchTo(ref, target, inputFileMaxBytes, deps, allowedDomains, signal, onBlocked);
    } catch (error) {
      await rm(target, { force: true });
      if (options.signal.aborted) throw options.signal.reason;
      if (signal.aborted) throw fault(ref, `not fetched within ${inputFileTimeoutMs} ms (INPUT_FILE_TIMEOUT_MS)`);
      throw error instanceof ExecutionError ? error : fault(ref, `could not be fetched: ${error instanceof Error ? error.message : String(error)}`);
    }
    const file: InputFile = { name: ref.name, path: target, payloadPath: ref.payloadPath, ...fetched };
    events.emit('input_file', { name: file.name, payloadPath: file.payloadPath, source: shownUrl(ref.url), bytes: file.bytes, sha256: file.sha256, contentType: file.contentType });
    files.push(file);
  }
  return files;
}

async function fetchTo(
  ref: InputFileRef,
  target: string,
  maxBytes: number,
  deps: Pick<RunnerDeps, 'openInputFile'>,
  allowedDomains: readonly string[],
  signal: AbortSignal,
  onBlocked: (event: { url: string; layer: string; reason: string }) => void,
): Promise<{ bytes: number; sha256: string; contentType: string }> {
  const opened = await deps.openInputFile(ref.url, allowedDomains, signal, onBlocked);
  if (!opened.ok) throw fault(ref, opened.reason);
  try {
    if (opened.contentLength !== undefined && opened.contentLength > maxBytes) throw tooLarge(ref, maxBytes, opened.contentLength);
    const hash = createHash('sha256');
    let bytes = 0;
    const measure = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        bytes += chunk.length;
        // Stop reading as soon as the limit is passed, whatever the server announced.
        if (bytes > maxBytes) return done(tooLarge(ref, maxBytes));
        hash.update(chunk);
        done(null, chunk);
      },
    });
    await pipeline(opened.body, measure, createWriteStream(target, { flags: 'wx' }), { signal });
    return { bytes, sha256: hash.digest('hex'), contentType: opened.contentType ?? contentTypeOf(ref.name) };
  } finally {
    opened.close();
  }
}

function tooLarge(ref: InputFileRef, maxBytes: number, announced?: number): ExecutionError {
  return fault(ref, `is larger than the input file limit of ${maxBytes} bytes (INPUT_FILE_MAX_BYTES)${announced !== undefined ? `: ${announced} bytes` : ''}`);
}

function fault(ref: InputFileRef, why: string): ExecutionError {
  return new ExecutionError('invalid_input', `input file at ${ref.payloadPath || '(root)'} (${shownUrl(ref.url)}): ${why}`);
}
