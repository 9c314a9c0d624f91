import { ExecutionError } from '../contract/errors.js';
import { checkFileName, uniqueName } from './file-names.js';
import { formatPath, pathId, type KeyPath } from '../contract/key-path.js';
import type { JsonSchema } from '../contract/json.js';

/**
 * Input files (docs/files-and-codes.md). An input value `{"$file": "s3://bucket/key"}` or
 * `{"$file": "https://host/path"}` names a file, optionally with `"name": "invoice.pdf"` when the
 * URL does not end in the file's name. A string under a payload-schema property marked
 * `"x-file": true` is read the same way (the string is the URL). The worker fetches each one
 * before `started`; the model sees `{"$file": "<name>"}` in their place, never a URL or a path.
 */

/** A file named by the input, before it is fetched. */
export interface InputFileRef {
  /** Where it sits in the input payload, as text: `invoice`, `documents.0`, `["a.b"]` (key-path.ts). */
  payloadPath: string;
  url: string;
  scheme: 's3' | 'http';
  /** Safe and unique among the execution's input files. */
  name: string;
}

/** A fetched input file, in the execution's scratch folder. */
export interface InputFile {
  name: string;
  /** Absolute local path; never shown to the model. */
  path: string;
  bytes: number;
  sha256: string;
  contentType: string;
  payloadPath: string;
}

/** The body of a file being fetched, as an adapter opens it; the runner reads and bounds it. */
export type OpenedFile =
  | { ok: true; body: AsyncIterable<Uint8Array>; contentLength?: number; contentType?: string; close(): void }
  | { ok: false; reason: string };

/** Files one execution may name: each is fetched before the run and kept on disk during it. */
export const MAX_INPUT_FILES = 20;

const FILE_KEYS = new Set(['$file', 'name']);

/**
 * Finds the input files of a payload (already validated against its schema) and returns them
 * with the payload as the model may see it. Throws `invalid_input` naming the first bad file.
 */
export function findInputFiles(payload: unknown, schema: JsonSchema | undefined): { files: InputFileRef[]; payload: unknown } {
  const found: Found[] = [];
  const shown = visit(payload, schema, [], found);
  if (found.length > MAX_INPUT_FILES) {
    throw new ExecutionError('invalid_input', `the input names ${found.length} files; at most ${MAX_INPUT_FILES} are accepted`);
  }
  const taken = new Set<string>();
  const files = found.map((f) => toRef(f, taken));
  const names = new Map(found.map((f, i) => [pathId(f.path), files[i]!.name]));
  return { files, payload: rename(shown, [], names) };
}

interface Found {
  path: KeyPath;
  url: string;
  name?: string;
}

/** A file as the payload names it: a string under an `x-file` property, or a `{"$file": …}` object. */
type FileValue = { kind: 'x-file'; url: string } | { kind: 'object'; value: Record<string, unknown> };

/** Walks value and schema together; each file found is replaced by what `onFile` returns. */
function mapFiles(value: unknown, schema: JsonSchema | undefined, path: KeyPath, onFile: (where: KeyPath, file: FileValue) => unknown): unknown {
  const node = typeof schema === 'object' ? schema : undefined;
  if (node?.['x-file'] === true && typeof value === 'string') return onFile(path, { kind: 'x-file', url: value });
  if (isPlainObject(value) && Object.hasOwn(value, '$file')) return onFile(path, { kind: 'object', value });
  const branches = node ? (['allOf', 'anyOf', 'oneOf'] as const).flatMap((k) => (Array.isArray(node[k]) ? (node[k] as JsonSchema[]) : [])) : [];
  if (Array.isArray(value)) {
    const items = node?.items;
    return value.map((item, i) => mapFiles(item, typeof items === 'object' && !Array.isArray(items) ? (items as JsonSchema) : branchSchema(branches, 'items'), [...path, String(i)], onFile));
  }
  if (isPlainObject(value)) {
    const props = (node?.properties ?? {}) as Record<string, JsonSchema>;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapFiles(v, ownSchema(props, k) ?? branchSchema(branches, 'properties', k), [...path, k], onFile)]));
  }
  return value;
}

/** Each file found becomes a placeholder to rename later; a malformed file value throws. */
function visit(value: unknown, schema: JsonSchema | undefined, path: KeyPath, out: Found[]): unknown {
  return mapFiles(value, schema, path, (where, file) => {
    if (file.kind === 'x-file') {
      out.push({ path: where, url: file.url });
      return FILE_MARK;
    }
    const { value: ref } = file;
    const extra = Object.keys(ref).filter((k) => !FILE_KEYS.has(k));
    if (extra.length > 0) throw bad(formatPath(where), `a {"$file": …} value may have only "$file" and "name", not ${extra.map((k) => JSON.stringify(k)).join(', ')}`);
    if (typeof ref.$file !== 'string' || ref.$file.trim() === '') throw bad(formatPath(where), '"$file" must be a non-empty URL string');
    if (ref.name !== undefined && typeof ref.name !== 'string') throw bad(formatPath(where), '"name" must be a string');
    out.push({ path: where, url: ref.$file.trim(), ...(typeof ref.name === 'string' ? { name: ref.name } : {}) });
    return FILE_MARK;
  });
}

/**
 * The payload as a person may see it (the local API's stored `input_payload`): each input file's
 * URL without user information, query or fragment (pre-signed signatures, tokens), keeping the
 * scheme, host and path that say which file it is (docs/files-and-codes.md#input-files).
 */
export function withShownFileUrls(payload: unknown, schema: JsonSchema | undefined): unknown {
  // Not a URL (a secret's placeholder, a value the worker will refuse): nothing to cut.
  const cut = (raw: string): string => (URL.canParse(raw.trim()) ? shownUrl(raw.trim()) : raw);
  return mapFiles(payload, schema, [], (_where, file) => {
    if (file.kind === 'x-file') return cut(file.url);
    const url = file.value.$file;
    return typeof url === 'string' ? { ...file.value, $file: cut(url) } : file.value;
  });
}

/** A marker from the combinators (`allOf: [{properties: …}]`), first branch that has one. */
function branchSchema(branches: JsonSchema[], kind: 'items' | 'properties', key?: string): JsonSchema | undefined {
  for (const branch of branches) {
    if (typeof branch !== 'object') continue;
    const sub = kind === 'items' ? branch.items : ownSchema(branch.properties as Record<string, JsonSchema> | undefined, key!);
    if (sub !== undefined && typeof sub === 'object' && !Array.isArray(sub)) return sub as JsonSchema;
  }
  return undefined;
}

/** A property's schema, read as an own property (a key named `constructor` is a key like any other). */
function ownSchema(properties: Record<string, JsonSchema> | undefined, key: string): JsonSchema | undefined {
  return properties && typeof properties === 'object' && Object.hasOwn(properties, key) ? properties[key] : undefined;
}

const FILE_MARK = Symbol('input file');

function rename(value: unknown, path: KeyPath, names: Map<string, string>): unknown {
  if (value === FILE_MARK) return { $file: names.get(pathId(path)) };
  if (Array.isArray(value)) return value.map((item, i) => rename(item, [...path, String(i)], names));
  if (isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rename(v, [...path, k], names)]));
  return value;
}

function toRef(found: Found, taken: Set<string>): InputFileRef {
  const { url: raw } = found;
  const path = formatPath(found.path);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw bad(path, 'the file is not named by an absolute URL (s3://bucket/key or https://host/path)');
  }
  let scheme: InputFileRef['scheme'];
  let lastSegment: string;
  if (url.protocol === 's3:') {
    scheme = 's3';
    const { bucket, key } = s3Location(raw);
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw bad(path, `${shown(raw)} does not name a valid S3 bucket`);
    if (key === '' || key.endsWith('/')) throw bad(path, `${shown(raw)} names a folder, not an object`);
    lastSegment = key.split('/').pop()!;
  } else if (url.protocol === 'https:' || url.protocol === 'http:') {
    scheme = 'http';
    if (url.username !== '' || url.password !== '') throw bad(path, `${shown(raw)} carries credentials; put them nowhere in a file URL`);
    lastSegment = decodeSegment(url.pathname.split('/').pop() ?? '');
  } else {
    throw bad(path, `files are fetched from s3:// or https:// URLs, not "${url.protocol}"`);
  }
  const name = checkFileName(found.name ?? lastSegment);
  if (!name.ok) {
    const hint = found.name === undefined ? ' (give the file a "name" when its URL does not end in one)' : '';
    throw bad(path, `unsafe file name: ${name.reason}${hint}`);
  }
  return { payloadPath: path, url: raw, scheme, name: uniqueName(name.name, taken) };
}

/** Bucket and key of `s3://bucket/key`; the key percent-decoded (`a%20b.pdf` is `a b.pdf`). */
export function s3Location(raw: string): { bucket: string; key: string } {
  const url = new URL(raw);
  return { bucket: url.hostname, key: decodeSegment(url.pathname.replace(/^\//, '')) };
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** A file URL as it may appear in messages and logs: without its query (signatures, tokens). */
export function shownUrl(raw: string): string {
  try {
    const url = new URL(raw);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return '(not a URL)';
  }
}

const shown = (raw: string) => JSON.stringify(shownUrl(raw));

function bad(path: string, why: string): ExecutionError {
  return new ExecutionError('invalid_input', `input file at ${path === '' ? '(root)' : path}: ${why}`);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
