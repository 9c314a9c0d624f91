/**
 * Names of the files an execution handles (docs/files-and-codes.md): input files offered to file choosers
 * and downloads saved as artifacts. A name is one path segment the local disk, S3 keys, URLs
 * and the model all read the same way: no separators, no control characters, no leading dot,
 * at most MAX_NAME_LENGTH characters, with characters that some systems refuse replaced.
 */

export const MAX_NAME_LENGTH = 120;

export type NameCheck = { ok: true; name: string } | { ok: false; reason: string };

/** Characters Windows, shells or URLs treat specially: replaced, not refused. */
const AWKWARD = /["*:<>?|]/g;

/**
 * Checks a name given by the producer or read from a URL. A name that tries to be a path
 * (separators, `.`/`..`, control characters) is refused: an input that does that is a fault to
 * report, not to guess around. Awkward characters are replaced and long names shortened,
 * keeping the extension.
 */
export function checkFileName(raw: string): NameCheck {
  const name = raw.normalize('NFC').trim();
  if (name === '') return { ok: false, reason: 'the name is empty' };
  if (/[\u0000-\u001f\u007f]/.test(name)) return { ok: false, reason: 'the name contains control characters' };
  if (/[/\\]/.test(name)) return { ok: false, reason: 'the name contains a path separator (/ or \\)' };
  if (/^\.+$/.test(name)) return { ok: false, reason: `"${name}" is not a file name` };
  const cleaned = name.replace(AWKWARD, '_').replace(/\s+/g, ' ').replace(/^\.+/, '');
  if (cleaned === '') return { ok: false, reason: 'the name is empty once its leading dots are removed' };
  return { ok: true, name: shorten(cleaned) };
}

/**
 * A safe name for something a page named (a download's suggested file name): never refused,
 * only made safe. The last path segment is kept; `fallback` stands in for nothing usable.
 */
export function safeFileName(raw: string, fallback = 'download'): string {
  const lastSegment = raw.split(/[/\\]/).pop() ?? '';
  const checked = checkFileName(lastSegment.replace(/[\u0000-\u001f\u007f]/g, ''));
  return checked.ok ? checked.name : fallback;
}

/** `name`, or `name (2).ext`, `name (3).ext`… — the first not in `taken`, which it joins. */
export function uniqueName(name: string, taken: Set<string>): string {
  let candidate = name;
  const { stem, extension } = splitExtension(name);
  for (let n = 2; taken.has(candidate.toLowerCase()); n++) candidate = shorten(`${stem} (${n})${extension}`);
  // Compared without case: two names differing only in case collide on some disks.
  taken.add(candidate.toLowerCase());
  return candidate;
}

function splitExtension(name: string): { stem: string; extension: string } {
  const dot = name.lastIndexOf('.');
  // `.tar.gz` keeps only `.gz`, which is enough for a type; an extension is short and plain.
  if (dot <= 0 || name.length - dot > 12 || !/^\.[\p{L}\p{N}_-]+$/u.test(name.slice(dot))) return { stem: name, extension: '' };
  return { stem: name.slice(0, dot), extension: name.slice(dot) };
}

function shorten(name: string): string {
  const chars = [...name];
  if (chars.length <= MAX_NAME_LENGTH) return name;
  const { stem, extension } = splitExtension(name);
  return [...stem].slice(0, MAX_NAME_LENGTH - [...extension].length).join('').trimEnd() + extension;
}

const TYPES_BY_EXTENSION: Record<string, string> = {
  '.csv': 'text/csv',
  '.txt': 'text/plain',
  '.json': 'application/json',
  '.xml': 'application/xml',
  '.html': 'text/html',
  '.pdf': 'application/pdf',
  '.zip': 'application/zip',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.xlsx': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  '.xls': 'application/vnd.ms-excel',
  '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  '.doc': 'application/msword',
};

/** The media type a file's extension suggests; `application/octet-stream` when it suggests none. */
export function contentTypeOf(name: string): string {
  return TYPES_BY_EXTENSION[splitExtension(name).extension.toLowerCase()] ?? 'application/octet-stream';
}
