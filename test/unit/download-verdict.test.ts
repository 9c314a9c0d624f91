import { describe, expect, it } from 'vitest';
import { createHostMatcher } from '../../src/browser/host-matcher.js';
import { downloadVerdict } from '../../src/browser/request-guard.js';

/** Which downloads the request guard hands on to be saved (docs/files-and-codes.md); the rest are refused. */
describe('download verdict', () => {
  const matcher = createHostMatcher(['files.test', '*.corp.test']);
  const page = 'http://files.test/reports';

  it.each([
    ['http://files.test/a.csv', page],
    ['https://eu.corp.test/a.pdf', page],
    ['blob:http://files.test/5b0c1b2e-0000-4000-8000-000000000000', page],
    ['data:text/csv;base64,YSxiCg==', page],
  ])('saves %s', (url, pageUrl) => {
    expect(downloadVerdict(matcher, url, pageUrl)).toEqual({ ok: true });
  });

  it.each([
    ['http://evil.test/a.csv', page, /host "evil\.test" is not in the allow-list/],
    ['blob:http://evil.test/5b0c1b2e', page, /a blob of another origin: host "evil\.test"/],
    ['data:text/csv,a', 'http://evil.test/', /a data: URL of a page outside the allow-list/],
    ['filesystem:http://files.test/temporary/a.csv', page, /scheme is never reachable/],
    ['file:///etc/passwd', page, /scheme is never reachable/],
  ])('refuses %s', (url, pageUrl, reason) => {
    const verdict = downloadVerdict(matcher, url, pageUrl);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toMatch(reason);
  });
});
