/**
 * Headers on every answer of the local service (docs/operations.md#browser-security). The dashboard is
 * a flat set of our own files: scripts, styles and fetches from this origin only; pictures from
 * here or `data:` (the live view's frames); no plugin, no `<base>`, no form posting elsewhere,
 * and no page of another origin may frame it (clickjacking), in CSP and in the older header.
 * Artifacts override the CSP with a stricter, sandboxing one (file-routes.ts).
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "media-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': DASHBOARD_CSP,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
};
