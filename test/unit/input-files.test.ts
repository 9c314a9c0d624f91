import { describe, expect, it } from 'vitest';
import { checkFileName, contentTypeOf, safeFileName, uniqueName } from '../../src/domain/file-names.js';
import { findInputFiles, MAX_INPUT_FILES, shownUrl } from '../../src/domain/input-files.js';

describe('file names', () => {
  it('keeps plain names and replaces awkward characters', () => {
    expect(checkFileName('invoice.pdf')).toEqual({ ok: true, name: 'invoice.pdf' });
    expect(checkFileName('Rechnung März: 2024?.pdf')).toEqual({ ok: true, name: 'Rechnung März_ 2024_.pdf' });
    expect(checkFileName('  report\u00a0 final.csv ')).toEqual({ ok: true, name: 'report final.csv' });
    expect(checkFileName('.hidden')).toEqual({ ok: true, name: 'hidden' });
  });

  it.each([
    ['../../etc/passwd', /path separator/],
    ['a\\b.txt', /path separator/],
    ['..', /not a file name/],
    ['a\u0000b', /control characters/],
    ['   ', /empty/],
  ])('refuses %j', (name, reason) => {
    const check = checkFileName(name);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.reason).toMatch(reason);
  });

  it('shortens long names keeping the extension', () => {
    const check = checkFileName(`${'x'.repeat(300)}.pdf`);
    expect(check.ok && check.name.length).toBe(120);
    expect(check.ok && check.name.endsWith('.pdf')).toBe(true);
  });

  it('makes any page-given name safe instead of refusing it', () => {
    expect(safeFileName('../../etc/passwd')).toBe('passwd');
    expect(safeFileName('..')).toBe('download');
    expect(safeFileName('')).toBe('download');
    expect(safeFileName('dir\\sub\\a\u0007b.csv')).toBe('ab.csv');
  });

  it('numbers names already taken, ignoring case', () => {
    const taken = new Set<string>();
    expect(['a.csv', 'A.csv', 'a.csv', 'b'].map((n) => uniqueName(n, taken))).toEqual(['a.csv', 'A (2).csv', 'a (3).csv', 'b']);
  });

  it('guesses a content type from the extension', () => {
    expect(contentTypeOf('x.PDF')).toBe('application/pdf');
    expect(contentTypeOf('x.csv')).toBe('text/csv');
    expect(contentTypeOf('x')).toBe('application/octet-stream');
  });
});

describe('input files in a payload', () => {
  it('finds $file values anywhere and shows the model their names only', () => {
    const { files, payload } = findInputFiles(
      {
        customer: 'ACME',
        invoice: { $file: 's3://inputs/2024/invoice%20march.pdf' },
        attachments: [{ $file: 'https://files.example.com/a/report.csv?sig=SECRET' }, { $file: 's3://inputs/uuid-123', name: 'contract.pdf' }, { $file: 'https://files.example.com/b/report.csv' }],
      },
      undefined,
    );
    expect(files).toEqual([
      { payloadPath: 'invoice', url: 's3://inputs/2024/invoice%20march.pdf', scheme: 's3', name: 'invoice march.pdf' },
      { payloadPath: 'attachments.0', url: 'https://files.example.com/a/report.csv?sig=SECRET', scheme: 'http', name: 'report.csv' },
      { payloadPath: 'attachments.1', url: 's3://inputs/uuid-123', scheme: 's3', name: 'contract.pdf' },
      { payloadPath: 'attachments.2', url: 'https://files.example.com/b/report.csv', scheme: 'http', name: 'report (2).csv' },
    ]);
    expect(payload).toEqual({
      customer: 'ACME',
      invoice: { $file: 'invoice march.pdf' },
      attachments: [{ $file: 'report.csv' }, { $file: 'contract.pdf' }, { $file: 'report (2).csv' }],
    });
    expect(JSON.stringify(payload)).not.toMatch(/s3:|https:|SECRET/);
  });

  it('reads a string under an "x-file" property as a file URL', () => {
    const schema = { type: 'object', properties: { doc: { type: 'string', format: 'uri', 'x-file': true }, note: { type: 'string' } } };
    const { files, payload } = findInputFiles({ doc: 's3://inputs/a.pdf', note: 's3://not/a-file' }, schema);
    expect(files.map((f) => f.payloadPath)).toEqual(['doc']);
    expect(payload).toEqual({ doc: { $file: 'a.pdf' }, note: 's3://not/a-file' });
    // Through array items and combinators too.
    const nested = { type: 'object', allOf: [{ properties: { docs: { type: 'array', items: { type: 'string', 'x-file': true } } } }] };
    expect(findInputFiles({ docs: ['s3://inputs/x.pdf', 's3://inputs/y.pdf'] }, nested).files.map((f) => f.name)).toEqual(['x.pdf', 'y.pdf']);
  });

  it('leaves a payload without files as it is', () => {
    const input = { a: [1, { b: 'c' }], d: null };
    expect(findInputFiles(input, undefined)).toEqual({ files: [], payload: input });
  });

  it.each([
    [{ f: { $file: 'ftp://host/a.pdf' } }, /input file at f: .*s3:\/\/ or https:\/\//],
    [{ f: { $file: 'not a url' } }, /input file at f: .*absolute URL/],
    [{ f: { $file: 's3://inputs/folder/' } }, /folder, not an object/],
    [{ f: { $file: 's3://X_bad/a.pdf' } }, /valid S3 bucket/],
    [{ f: { $file: 'https://user:pw@host/a.pdf' } }, /credentials/],
    [{ f: { $file: 's3://inputs/a.pdf', name: '../../etc/passwd' } }, /input file at f: unsafe file name: the name contains a path separator/],
    [{ f: { $file: 'https://host/files/..%2F..%2Fetc%2Fpasswd' } }, /unsafe file name: .*give the file a "name"/],
    [{ f: { $file: 'https://host/' } }, /unsafe file name: the name is empty/],
    [{ f: { $file: 's3://inputs/a.pdf', size: 3 } }, /only "\$file" and "name"/],
    [{ f: { $file: 42 } }, /non-empty URL string/],
    [{ f: { $file: 's3://inputs/a.pdf', name: 7 } }, /"name" must be a string/],
  ])('refuses %j with invalid_input', (payload, message) => {
    expect(() => findInputFiles(payload, undefined)).toThrow(expect.objectContaining({ code: 'invalid_input', message: expect.stringMatching(message) }));
  });

  it('refuses more than MAX_INPUT_FILES files', () => {
    const many = Array.from({ length: MAX_INPUT_FILES + 1 }, (_, i) => ({ $file: `s3://inputs/${i}.pdf` }));
    expect(() => findInputFiles(many, undefined)).toThrow(expect.objectContaining({ code: 'invalid_input', message: expect.stringContaining(`at most ${MAX_INPUT_FILES}`) }));
  });

  it('shows file URLs without their query', () => {
    expect(shownUrl('https://h.test/a/b.pdf?X-Amz-Signature=abc')).toBe('https://h.test/a/b.pdf');
    expect(shownUrl('s3://bucket/key.pdf')).toBe('s3://bucket/key.pdf');
  });
});
