/**
 * Artifact keys (docs/counters-and-artifacts.md#artifacts): `{prefix}executions/{executionId}/{name}`, shared by both stores
 * so local and S3 layouts never drift apart. Every part is checked here: a key is also a file
 * path for the local store, and no input may climb out of its execution's folder.
 */

/** Throws when a name or id could escape its folder or is otherwise unsafe as a key part. */
export function assertSafeSegment(kind: string, value: string): void {
  if (value.length === 0 || value.length > 255) throw new Error(`invalid artifact ${kind} ${JSON.stringify(value)}: must be 1 to 255 characters`);
  if (/[\u0000-\u001f\u007f\\]/.test(value)) {
    throw new Error(`invalid artifact ${kind} ${JSON.stringify(value)}: control characters and backslashes are not allowed`);
  }
  if (value === '.' || value === '..' || value.includes('/')) {
    throw new Error(`invalid artifact ${kind} ${JSON.stringify(value)}: must be a single path segment`);
  }
}

/** Names may hold sub-folders (`screenshots/001.png`), each segment safe. */
export function assertSafeName(name: string): void {
  if (name.startsWith('/')) throw new Error(`invalid artifact name ${JSON.stringify(name)}: must be relative`);
  const segments = name.split('/');
  for (const segment of segments) assertSafeSegment('name', segment);
}

/** The prefix is configuration (`S3_PREFIX`): `''` or segments ending in `/`. */
export function normalisePrefix(prefix: string): string {
  if (prefix === '') return '';
  const withSlash = prefix.endsWith('/') ? prefix : `${prefix}/`;
  const segments = withSlash.slice(0, -1).split('/');
  if (withSlash.startsWith('/')) throw new Error(`invalid artifact prefix ${JSON.stringify(prefix)}: must be relative`);
  for (const segment of segments) assertSafeSegment('prefix', segment);
  return withSlash;
}

export function artifactKey(prefix: string, executionId: string, name: string): string {
  assertSafeSegment('execution id', executionId);
  assertSafeName(name);
  return `${prefix}executions/${executionId}/${name}`;
}

/** `base` + key, with exactly one `/` between them and each key segment url-encoded. */
export function publicUrl(base: string, key: string): string {
  return `${base.replace(/\/+$/, '')}/${encodeKey(key)}`;
}

export function encodeKey(key: string): string {
  return key.split('/').map(encodeURIComponent).join('/');
}
