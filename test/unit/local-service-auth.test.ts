import type http from 'node:http';
import { describe, expect, it } from 'vitest';
import { createAuth, LOGIN_LINK_MAX_TTL_MS, SESSION_TTL_MS } from '../../src/local-service/auth.js';

const request = (headers: Record<string, string>) => ({ headers }) as unknown as http.IncomingMessage;
const cookieOf = (setCookie: string) => setCookie.split(';')[0]!;

describe('local service sign-in', () => {
  const auth = createAuth(['key-one', 'key-two']);

  it('takes any configured key, and a session until it expires', () => {
    expect(auth.check(request({ 'x-service-key': 'key-two' }))).toEqual({ kind: 'key' });
    expect(auth.check(request({ 'x-service-key': 'key-three' }))).toEqual({ kind: 'none' });
    const now = Date.now();
    const cookie = cookieOf(auth.sessionCookie(now - SESSION_TTL_MS + 60_000));
    expect(auth.check(request({ cookie }))).toEqual({ kind: 'session' });
    expect(auth.check(request({ cookie: cookieOf(auth.sessionCookie(now - SESSION_TTL_MS - 1)) }))).toEqual({ kind: 'none' });
  });

  it('ends sessions and links when their key is taken out of the list', () => {
    const cookie = cookieOf(auth.sessionCookie());
    const { token } = auth.loginToken('#/executions/x');
    const later = createAuth(['key-one']);
    expect(later.check(request({ cookie }))).toEqual({ kind: 'none' });
    expect(later.redeem(token)).toBeUndefined();
    // The same keys (a restart) keep them.
    const restarted = createAuth(['key-two', 'key-one']);
    expect(restarted.check(request({ cookie }))).toEqual({ kind: 'session' });
    expect(restarted.redeem(token)).toBe('#/executions/x');
  });

  it('redeems a login link for its route until it expires, and nothing else', () => {
    const now = 1_000_000;
    const { token, expiresAtMs } = auth.loginToken('#/executions/abc', 60_000, now);
    expect(expiresAtMs).toBe(now + 60_000);
    expect(auth.redeem(token, now + 59_999)).toBe('#/executions/abc');
    expect(auth.redeem(token, now + 60_000)).toBeUndefined();
    // A session cookie is not a login token, nor the other way round.
    expect(auth.redeem(cookieOf(auth.sessionCookie(now)).split('=')[1]!, now)).toBeUndefined();
    expect(auth.check(request({ cookie: `ew_session=${token}` }))).toEqual({ kind: 'none' });
    expect(() => auth.loginToken('https://evil.test/')).toThrow(/not a dashboard route/);
    expect(auth.loginToken('#/x', 10 * LOGIN_LINK_MAX_TTL_MS, now).expiresAtMs).toBe(now + LOGIN_LINK_MAX_TTL_MS);
  });
});
