import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginLink } from '../../src/contract/access.js';
import { startLocalServer } from '../../src/local-service/server.js';
import { silentLogger, startHarness, type Harness } from './local-api-harness.js';

/**
 * The harness's default transport (Fastify's `inject`, no socket): the server's port-dependent
 * parts have the values server.ts defines for a server started with `listen: false`.
 */

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

describe('the local API reached through inject', () => {
  it('listens on nothing: the harness has no URL to give', () => {
    expect(() => h.server.url).toThrow(/network: true/);
  });

  it('serves the Host inject names (localhost:80) and refuses another with 421, as a listening server does', async () => {
    expect((await h.api('GET', '/healthz')).status).toBe(200);
    expect((await h.api('GET', '/healthz', undefined, { Host: '127.0.0.1:80' })).status).toBe(200);
    const foreign = await h.api('GET', '/healthz', undefined, { Host: 'evil.test' });
    expect(foreign.status).toBe(421);
    expect(foreign.body).toMatchObject({ detail: [{ loc: ['header', 'Host'], type: 'misdirected_request' }] });
    expect((await h.api('GET', '/healthz', undefined, { Host: 'localhost:8080' })).status).toBe(421);
  });

  it('names its session cookie after port 80, and its login links after http://localhost', async () => {
    const cookie = await h.signIn();
    expect(cookie).toMatch(/^ew_session_80=[^;]+$/);
    expect((await h.api('GET', '/api/session', undefined, { Cookie: cookie })).status).toBe(200);
    const made = await h.api.as(loginLink)('POST', '/api/login-links', { route: '#/executions' });
    expect(made.status).toBe(201);
    const link = new URL(made.body.url);
    expect(link.origin).toBe('http://localhost');
    const opened = await h.api('GET', `${link.pathname}${link.search}`, undefined, {});
    expect(opened.status).toBe(303);
    expect(opened.headers.get('set-cookie')).toMatch(/^ew_session_80=/);
  });

  it('keeps its sessions across a restart (the cookie name does not change)', async () => {
    const cookie = await h.signIn();
    await h.restartServer();
    expect((await h.api('GET', '/api/session', undefined, { Cookie: cookie })).status).toBe(200);
  });

  it('is reached only with listen: false and no port: options mixing the two modes are refused before anything opens', async () => {
    const service = { apiKeys: ['k'], redisUrl: 'redis://127.0.0.1:1', queueName: 'q', queuePrefix: 'bull', logger: silentLogger };
    // Objects the overloads take as one mode while they carry the other's key.
    const both = { ...service, listen: false as const, port: 0 };
    const listening = { ...service, port: 0, listen: true };
    await expect(startLocalServer(both)).rejects.toThrow(/listen takes only false/);
    await expect(startLocalServer(listening)).rejects.toThrow(/listen takes only false/);
  });
});
