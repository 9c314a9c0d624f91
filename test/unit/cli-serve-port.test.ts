import { describe, expect, it } from 'vitest';
import { servePort } from '../../src/cli.js';

/** `execution-worker serve` listens on PORT, 8080 when it is not given (docs/configuration.md). */

describe('servePort', () => {
  it('takes 8080 when PORT is unset or blank, the number when one is given, and refuses anything else', () => {
    expect(servePort(undefined)).toBe(8080);
    expect(servePort('')).toBe(8080);
    expect(servePort('  ')).toBe(8080);
    expect(servePort('9090')).toBe(9090);
    expect(servePort('0')).toBe(0);
    expect(() => servePort('http')).toThrow(/PORT=http: must be a port number/);
    expect(() => servePort('70000')).toThrow(/must be a port number/);
  });
});
