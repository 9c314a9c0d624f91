/**
 * How an artifact may be served to a browser (docs/operations.md#browser-security). Artifacts hold what pages
 * gave (downloads, recorded text), so the type a browser is told comes from the artifact's name
 * alone, never from what a page or the store said: only the kinds the dashboard shows inline
 * (video, captions, pictures, JSON and plain text) are served inline; everything else, and every
 * download a page made whatever its name, is served as an opaque attachment, so an `.svg`,
 * `.html` or `.xml` never renders in the origin that serves it.
 */

/** Kinds a browser shows without running anything, by extension (lower case, with the dot). */
const INLINE_TYPES: Readonly<Record<string, string>> = {
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.vtt': 'text/vtt; charset=utf-8',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.json': 'application/json; charset=utf-8',
  '.jsonl': 'application/x-ndjson; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.log': 'text/plain; charset=utf-8',
};

/** Served as a file to save, never rendered. */
export const ATTACHMENT_TYPE = 'application/octet-stream';

/**
 * A CSP for every artifact response: should a browser render one anyway (opened directly), the
 * document gets an opaque origin, no script and no subresource beyond its own bytes.
 */
export const ARTIFACT_CSP = "default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'; sandbox";

export interface ArtifactServing {
  contentType: string;
  /** `Content-Disposition` value, or undefined when the artifact is shown inline. */
  disposition?: string;
}

function extensionOf(name: string): string {
  const base = name.slice(name.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot <= 0 ? '' : base.slice(dot).toLowerCase();
}

/** `attachment; filename*=UTF-8''…` (RFC 6266), with a plain ASCII fallback name. */
export function attachmentDisposition(name: string): string {
  const base = name.slice(name.lastIndexOf('/') + 1);
  const ascii = base.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(base)}`;
}

/**
 * Type and disposition for the artifact `name` (its path under the execution's folder, e.g.
 * `video.mp4`, `downloads/report.svg`).
 */
export function artifactServing(name: string): ArtifactServing {
  const normalised = name.replace(/\\/g, '/');
  const pageSupplied = normalised.startsWith('downloads/') || normalised.includes('/downloads/');
  const inline = pageSupplied ? undefined : INLINE_TYPES[extensionOf(normalised)];
  if (inline !== undefined) return { contentType: inline };
  return { contentType: ATTACHMENT_TYPE, disposition: attachmentDisposition(normalised) };
}
