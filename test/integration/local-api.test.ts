import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpControlPlane } from '../../src/control-plane/http-client.js';
import { loginLink, sessionInfo } from '../../src/contract/access.js';
import { errorBody } from '../../src/contract/api-errors.js';
import { execution as executionAnswer, executionList } from '../../src/contract/executions.js';
import { workflow as workflowAnswer, workflowList } from '../../src/contract/workflows.js';
import { dashboardDir, packageRoot } from '../../src/local-service/file-routes.js';
import { API_KEY, silentLogger, startHarness, type Harness } from '../contract/local-api-harness.js';
import { rawRequest } from '../contract/local-api-raw-http.js';

/**
 * The worker's HTTP client against the local API (both ours, both real, on real Redis), and the
 * artifacts route: content types, ranges, path traversal, key by header or cookie.
 */

let h: Harness;
let root: string;
let artifactsDir: string;

beforeAll(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), 'local-api-test-'));
  artifactsDir = path.join(root, 'artifacts');
  await fs.mkdir(path.join(artifactsDir, 'executions', 'e1'), { recursive: true });
  await fs.writeFile(path.join(root, 'secret.txt'), 'outside');
  await fs.writeFile(path.join(artifactsDir, 'executions', 'e1', 'video.mp4'), Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 256)));
  await fs.writeFile(path.join(artifactsDir, 'executions', 'e1', 'steps.vtt'), 'WEBVTT\n');
  await fs.writeFile(path.join(artifactsDir, 'executions', 'e1', 'output.json'), '{"status":"completed"}');
  await fs.writeFile(path.join(artifactsDir, 'executions', 'e1', 'logs.jsonl'), '{"type":"x"}\n');
  await fs.symlink(path.join(root, 'secret.txt'), path.join(artifactsDir, 'executions', 'e1', 'link.txt'));
  h = await startHarness({ artifactsDir, network: true });
});

afterAll(async () => {
  await h?.close();
  await fs.rm(root, { recursive: true, force: true });
});

describe('the worker client against the local API', () => {
  it('reads the execution and the versions, reports started and completed, and sees 409 after', async () => {
    const spec = { prompt: 'p', allowedDomains: ['a.test'] };
    const workflow = (await h.api.as(workflowAnswer)('POST', '/api/workflows', spec)).body;
    const execution = (await h.api.as(executionAnswer)('POST', `/api/workflows/${workflow.workflow_uuid}/execute`, { inputPayload: { a: 1 } })).body;
    const id = execution.execution_uuid;
    const plane = createHttpControlPlane({ baseUrl: h.server.url, apiKey: API_KEY, logger: silentLogger, baseDelayMs: 1, maxDelayMs: 5 });
    const signal = new AbortController().signal;

    expect(await plane.getExecution(id, signal)).toMatchObject({ execution_uuid: id, status: 'queued', input_payload: { a: 1 } });
    const versions = await plane.listVersions(workflow.workflow_uuid, signal);
    expect(versions.find((v) => v.workflow_version_uuid === execution.workflow_version_uuid)?.specification).toEqual(spec);

    expect(await plane.markStarted(id, new Date().toISOString(), signal)).toEqual({ ok: true });
    await plane.reportCompleted(id, {
      completedAt: new Date().toISOString(),
      durationMs: 5,
      nSteps: 1,
      nAgentActions: 2,
      nScreenshots: 3,
      outputUrl: 'file:///o.json',
      videoUrl: null,
      logsUrl: null,
    });
    expect(await plane.getExecution(id, signal)).toMatchObject({ status: 'completed', n_agent_actions: 2, output_url: 'file:///o.json', video_url: null });

    const again = await plane.markStarted(id, new Date().toISOString(), signal);
    expect(again).toMatchObject({ ok: false, status: 409 });
    expect(await plane.markStarted('unknown', new Date().toISOString(), signal)).toMatchObject({ ok: false, status: 404 });
  });

  it('refuses a field a body does not know, so a misspelt one never silently changes what runs', async () => {
    const workflow = (await h.api.as(workflowAnswer)('POST', '/api/workflows', { prompt: 'p', allowedDomains: ['a.test'], configuration: { inputPayload: { user: 'default' } } })).body;
    const id = workflow.workflow_uuid;
    // The snake_case spelling is the caller's input, not the default.
    const bySnake = await h.api.as(executionAnswer)('POST', `/api/workflows/${id}/execute`, { input_payload: { user: 'caller' } });
    expect(bySnake.status).toBe(201);
    expect(bySnake.body.input_payload).toEqual({ user: 'caller' });
    for (const [method, url, body, field] of [
      ['POST', `/api/workflows/${id}/execute`, { inputPayLoad: { user: 'caller' } }, 'inputPayLoad'],
      ['POST', '/api/workflows', { prompt: 'p', allowedDomains: ['a.test'], outputShema: { type: 'object' } }, 'outputShema'],
      ['PATCH', `/api/workflows/${id}`, { maxStep: 3 }, 'maxStep'],
      ['POST', '/api/login-links', { route: '#/executions', ttl: 60 }, 'ttl'],
    ] as const) {
      const answer = await h.api.as(errorBody)(method, url, body);
      expect(answer.status, `${method} ${url}`).toBe(422);
      expect(JSON.stringify(answer.body), `${method} ${url}`).toContain(field);
    }
    // A field given in both spellings: which one was meant cannot be known.
    for (const [url, body, field] of [
      [`/api/workflows/${id}/execute`, { inputPayload: { user: 'a' }, input_payload: { user: 'b' } }, 'input_payload'],
      ['/api/workflows', { prompt: 'p', allowedDomains: ['evil.test'], allowed_domains: ['shop.test'] }, 'allowed_domains'],
    ] as const) {
      const answer = await h.api.as(errorBody)('POST', url, body);
      expect(answer.status, url).toBe(422);
      expect(answer.body.detail?.[0], url).toMatchObject({ loc: ['body', field], type: 'duplicate_field' });
    }
    // Nothing was created by the refused calls.
    const executions = (await h.api.as(executionList)('GET', `/api/executions?workflow_uuid=${id}`)).body;
    expect(executions.total).toBe(1);
  });

  it('refuses a schema that refers to itself without end, and takes a recursive one that ends', async () => {
    for (const field of ['payloadSchema', 'outputSchema']) {
      for (const schema of [{ $ref: '#', properties: { a: { $ref: '#' } } }, { $ref: '#', type: 'object' }]) {
        const res = await h.api.as(errorBody)('POST', '/api/workflows', { prompt: 'p', allowedDomains: ['a.test'], [field]: schema });
        expect(res.status, `${field} ${JSON.stringify(schema)}`).toBe(422);
        expect(res.body.detail?.[0], field).toMatchObject({ loc: ['body', field], type: 'schema_invalid' });
      }
    }
    const tree = { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#' } } } };
    expect((await h.api('POST', '/api/workflows', { prompt: 'p', allowedDomains: ['a.test'], payloadSchema: tree, outputSchema: tree })).status).toBe(201);
  });

  it('fails with the 401 status when the key is wrong', async () => {
    const plane = createHttpControlPlane({ baseUrl: h.server.url, apiKey: 'wrong', logger: silentLogger });
    await expect(plane.getExecution('x', new AbortController().signal)).rejects.toMatchObject({ status: 401 });
  });
});

describe('input files in the stored execution', () => {
  it('shows their URLs without query or credentials; only the queued job carries them whole', async () => {
    const signed = 'https://files.test/in/invoice%202024.pdf?X-Amz-Signature=deadbeefcafe&X-Amz-Credential=AKIAEXAMPLE';
    const schema = { type: 'object', properties: { scan: { type: 'string', 'x-file': true }, token: { type: 'string', 'x-secret': true, 'x-file': true } } };
    const created = (await h.api.as(workflowAnswer)('POST', '/api/workflows', { prompt: 'p', allowedDomains: ['files.test'], payloadSchema: schema })).body;
    const input = { invoice: { $file: signed, name: 'invoice.pdf' }, scan: 'https://user:pw@files.test/scan.png?token=s3cr3t#frag', token: 'https://files.test/t?sig=1', docs: [{ $file: 's3://bucket/a/b.pdf?versionId=7' }] };
    const execution = await h.api.as(executionAnswer)('POST', `/api/workflows/${created.workflow_uuid}/execute`, { inputPayload: input });
    expect(execution.status).toBe(201);
    const shown = { invoice: { $file: 'https://files.test/in/invoice%202024.pdf', name: 'invoice.pdf' }, scan: 'https://files.test/scan.png', token: '{{token}}', docs: [{ $file: 's3://bucket/a/b.pdf' }] };
    expect(execution.body.input_payload).toEqual(shown);
    const id = execution.body.execution_uuid;
    expect((await h.api.as(executionAnswer)('GET', `/api/executions/${id}`)).body.input_payload).toEqual(shown);
    const listed = (await h.api.as(executionList)('GET', '/api/executions')).body.items;
    expect(JSON.stringify(listed)).not.toMatch(/Signature|AKIAEXAMPLE|s3cr3t|user:pw|versionId/);
    const job = await h.queue.getJob(id);
    expect(job?.data.inputPayload).toEqual(input);
  });
});

describe('allow-list entries in the local API', () => {
  it.each(['*.com', '*.co.uk', '*.r2.dev', '*.com.uy', '*.s3.us-east-1.amazonaws.com', 'shop.test:99999'])('answers 422 to %j, as a worker would refuse it', async (entry) => {
    for (const [method, path] of [['POST', '/api/workflows']] as const) {
      const res = await h.api.as(errorBody)(method, path, { prompt: 'p', allowedDomains: ['shop.test', entry] });
      expect(res.status).toBe(422);
      expect(res.body.detail).toContainEqual(expect.objectContaining({ loc: ['body', 'allowedDomains', 1], type: 'x-allow-list-entry' }));
    }
    const created = (await h.api.as(workflowAnswer)('POST', '/api/workflows', { prompt: 'p', allowedDomains: ['shop.test'] })).body;
    const patched = await h.api('PATCH', `/api/workflows/${created.workflow_uuid}`, { allowedDomains: [entry] });
    expect(patched.status).toBe(422);
  });

  it('accepts a host with a port and a wildcard below a public suffix', async () => {
    const res = await h.api.as(workflowAnswer)('POST', '/api/workflows', { prompt: 'p', allowedDomains: ['shop.test:8443', '*.bucket.r2.dev', '[::1]:3000'] });
    expect(res.status).toBe(201);
    expect(res.body.current_version?.specification.allowedDomains).toEqual(['shop.test:8443', '*.bucket.r2.dev', '[::1]:3000']);
  });
});

describe('errors of the HTTP layer, in the seed\'s shape', () => {
  it('answers a wrong method with 405 and Allow, HEAD included', async () => {
    const put = await h.api.as(errorBody)('PUT', '/api/workflows', {});
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST');
    expect(put.body).toEqual({ detail: [{ loc: ['method'], msg: 'PUT is not allowed here', type: 'method_not_allowed' }] });
    expect((await fetch(`${h.server.url}/api/workflows`, { method: 'HEAD', headers: { 'X-Service-Key': API_KEY } })).status).toBe(405);
    expect((await fetch(`${h.server.url}/healthz`, { method: 'HEAD' })).status).toBe(200);
  });

  it('refuses a __proto__ key wherever it sits rather than dropping it, and a JSON fault says where, not what the text around it was', async () => {
    const before = (await h.api.as(workflowList)('GET', '/api/workflows')).body.total;
    for (const [raw, loc] of [
      ['{"prompt":"p","allowedDomains":["a.test"],"configuration":{"__proto__":{"inputPayload":{"u":1}},"constructor":{"x":1}}}', ['body', 'configuration', '__proto__']],
      ['{"__proto__":{"prompt":"p"},"prompt":"p","allowedDomains":["a.test"]}', ['body', '__proto__']],
      ['{"prompt":"p","allowedDomains":["a.test"],"payloadSchema":{"type":"object","properties":{"a":{"items":[{"__proto__":1}]}}}}', ['body', 'payloadSchema', 'properties', 'a', 'items', 0, '__proto__']],
    ] as const) {
      const res = await h.api.as(errorBody)('POST', '/api/workflows', raw);
      expect(res.status, raw).toBe(422);
      expect(res.body.detail?.[0]).toMatchObject({ loc, type: 'key_refused' });
    }
    expect((await h.api.as(workflowList)('GET', '/api/workflows')).body.total).toBe(before);
    // A key named constructor or prototype is an ordinary key, kept as given.
    const kept = await h.api.as(workflowAnswer)('POST', '/api/workflows', '{"prompt":"p","allowedDomains":["a.test"],"configuration":{"constructor":{"x":1},"prototype":2}}');
    expect(kept.status).toBe(201);
    expect(kept.body.current_version?.configuration).toEqual({ constructor: { x: 1 }, prototype: 2 });
    const broken = await h.api.as(errorBody)('POST', '/api/workflows', '{"prompt":"p","password": hunter2xyz}');
    expect(broken.status).toBe(422);
    expect(JSON.stringify(broken.body)).not.toContain('hunter2xyz');
    expect(broken.body.detail?.[0]).toMatchObject({ loc: ['body'], type: 'json_invalid' });
  });

  it('reads a body as JSON only when it is sent as JSON, and refuses malformed, oversized and unreadable requests', async () => {
    const bad = await h.api.as(errorBody)('POST', '/api/workflows', '{"prompt":');
    expect(bad.status).toBe(422);
    expect(bad.body.detail?.[0]).toMatchObject({ loc: ['body'], type: 'json_invalid' });
    // A page elsewhere can post text/plain without asking first: such a body is never read.
    const before = (await h.api.as(workflowList)('GET', '/api/workflows')).body.total;
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', undefined]) {
      const plain = await fetch(`${h.server.url}/api/workflows`, {
        method: 'POST',
        headers: { 'X-Service-Key': API_KEY, ...(type ? { 'Content-Type': type } : {}) },
        // A Blob without a type: fetch sends no Content-Type for it.
        body: type ? JSON.stringify({ prompt: 'p', allowedDomains: ['a.test'] }) : new Blob([JSON.stringify({ prompt: 'p', allowedDomains: ['a.test'] })]),
      });
      expect(plain.status, String(type)).toBe(415);
      expect(await plain.json()).toEqual({ detail: [{ loc: ['header', 'Content-Type'], msg: 'a request body must be sent as application/json', type: 'unsupported_media_type' }] });
    }
    expect((await h.api.as(workflowList)('GET', '/api/workflows')).body.total).toBe(before);
    const json = await h.api('POST', '/api/workflows', { prompt: 'p', allowedDomains: ['a.test'] }, { 'X-Service-Key': API_KEY, 'Content-Type': 'application/json; charset=utf-8' });
    expect(json.status).toBe(201);
    const large = await h.api.as(errorBody)('POST', '/api/workflows', { prompt: 'x'.repeat(1_100_000), allowedDomains: ['a.test'] });
    expect(large.status).toBe(413);
    expect(large.body).toEqual({ detail: [{ loc: ['body'], msg: 'body larger than 1048576 bytes', type: 'too_large' }] });
    const undecodable = await h.api.as(errorBody)('GET', '/api/executions/%E0%A4%A');
    expect(undecodable.status).toBe(404);
    expect(undecodable.body).toEqual({ detail: [{ loc: ['path'], msg: 'Not Found', type: 'not_found' }] });
    const query = await h.api.as(errorBody)('GET', '/api/executions?limit=abc&status=done');
    expect(query.status).toBe(422);
    expect(query.body.detail?.map((d) => d.loc)).toEqual([['query', 'limit'], ['query', 'status']]);
  });
});

describe('artifacts', () => {
  const get = (p: string, headers: Record<string, string> = { 'X-Service-Key': API_KEY }) => fetch(`${h.server.url}${p}`, { headers });

  it.each([
    ['video.mp4', 'video/mp4'],
    ['steps.vtt', 'text/vtt; charset=utf-8'],
    ['output.json', 'application/json; charset=utf-8'],
    ['logs.jsonl', 'application/x-ndjson; charset=utf-8'],
  ])('serves %s as %s', async (name, type) => {
    const res = await get(`/artifacts/executions/e1/${name}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(type);
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    await res.arrayBuffer();
  });

  it('serves what a browser would render as an attachment, with nosniff and a sandboxing CSP', async () => {
    const dir = path.join(artifactsDir, 'executions', 'e1');
    await fs.mkdir(path.join(dir, 'downloads'), { recursive: true });
    await fs.writeFile(path.join(dir, 'downloads', 'evil.svg'), '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    await fs.writeFile(path.join(dir, 'downloads', 'photo.png'), 'not really a png');
    await fs.writeFile(path.join(dir, 'page.html'), '<script>alert(1)</script>');
    for (const name of ['downloads/evil.svg', 'downloads/photo.png', 'page.html']) {
      const res = await get(`/artifacts/executions/e1/${name}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/octet-stream');
      expect(res.headers.get('content-disposition')).toMatch(/^attachment; /);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('content-security-policy')).toMatch(/sandbox/);
      await res.arrayBuffer();
    }
    // What the dashboard shows inline stays inline, still sandboxed should it be opened alone.
    const video = await get('/artifacts/executions/e1/video.mp4');
    expect(video.headers.get('content-disposition')).toBeNull();
    expect(video.headers.get('content-security-policy')).toMatch(/sandbox/);
    await video.arrayBuffer();
  });

  it('gives the dashboard a CSP and refuses framing', async () => {
    for (const p of ['/', '/dashboard/app.js', '/healthz']) {
      const res = await fetch(`${h.server.url}${p}`);
      expect(res.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
      expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      await res.arrayBuffer();
    }
  });

  it('answers range requests with 206 and the exact bytes', async () => {
    const res = await get('/artifacts/executions/e1/video.mp4', { 'X-Service-Key': API_KEY, Range: 'bytes=10-19' });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe('bytes 10-19/1000');
    expect(res.headers.get('content-length')).toBe('10');
    expect([...new Uint8Array(await res.arrayBuffer())]).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);

    const tail = await get('/artifacts/executions/e1/video.mp4', { 'X-Service-Key': API_KEY, Range: 'bytes=-4' });
    expect(tail.headers.get('content-range')).toBe('bytes 996-999/1000');
    expect([...new Uint8Array(await tail.arrayBuffer())]).toEqual([996 % 256, 997 % 256, 998 % 256, 999 % 256]);

    const open = await get('/artifacts/executions/e1/video.mp4', { 'X-Service-Key': API_KEY, Range: 'bytes=990-' });
    expect(open.headers.get('content-range')).toBe('bytes 990-999/1000');
    await open.arrayBuffer();

    const beyond = await get('/artifacts/executions/e1/video.mp4', { 'X-Service-Key': API_KEY, Range: 'bytes=5000-' });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get('content-range')).toBe('bytes */1000');
  });

  it('reads ranges per RFC 9110: clipped to the end, and the whole file for what it does not serve', async () => {
    const range = (value: string) => get('/artifacts/executions/e1/video.mp4', { 'X-Service-Key': API_KEY, Range: value });
    const clipped = await range('bytes=990-5000');
    expect(clipped.status).toBe(206);
    expect(clipped.headers.get('content-range')).toBe('bytes 990-999/1000');
    expect((await clipped.arrayBuffer()).byteLength).toBe(10);
    for (const whole of ['bytes=0-1,5-6', 'items=0-1']) {
      const res = await range(whole);
      expect(res.status).toBe(200);
      expect((await res.arrayBuffer()).byteLength).toBe(1000);
    }
    const empty = path.join(artifactsDir, 'executions', 'e1', 'empty.txt');
    await fs.writeFile(empty, '');
    const none = await get('/artifacts/executions/e1/empty.txt', { 'X-Service-Key': API_KEY, Range: 'bytes=0-' });
    expect(none.status).toBe(416);
    await none.arrayBuffer();
  });

  it('needs the key, by header or by a dashboard session made with a key', async () => {
    const none = await get('/artifacts/executions/e1/output.json', {});
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({ detail: [{ loc: ['header', 'X-Service-Key'], msg: 'missing or invalid API key', type: 'unauthorized' }] });
    // The raw key in a cookie is not a session.
    expect((await get('/artifacts/executions/e1/output.json', { Cookie: `service_key=${encodeURIComponent(API_KEY)}` })).status).toBe(401);

    const wrong = await fetch(`${h.server.url}/api/session`, { method: 'POST', headers: { 'X-Service-Key': 'wrong' } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    const signIn = await fetch(`${h.server.url}/api/session`, { method: 'POST', headers: { 'X-Service-Key': API_KEY } });
    expect(signIn.status).toBe(204);
    const setCookie = signIn.headers.get('set-cookie') ?? '';
    // Named after the service's port: browsers share a host's cookies between ports.
    expect(setCookie).toMatch(new RegExp(`^ew_session_${new URL(h.server.url).port}=[^;]+; Path=/; HttpOnly; SameSite=Strict; Max-Age=43200$`));
    const cookie = setCookie.split(';')[0]!;

    const withCookie = await get('/artifacts/executions/e1/output.json', { Cookie: `theme=dark; ${cookie}` });
    expect(withCookie.status).toBe(200);
    expect(await withCookie.json()).toEqual({ status: 'completed' });
    // The session signs in as the key that opened it: API_KEY is the second of API_KEYS.
    expect((await h.api.as(sessionInfo)('GET', '/api/session', undefined, { Cookie: cookie })).body).toEqual({ via: 'session', identity: 'bootstrap-2' });
    // A tampered session is refused.
    expect((await get('/artifacts/executions/e1/output.json', { Cookie: `${cookie.slice(0, -2)}xx` })).status).toBe(401);
    // A session cannot make itself a new one: signing in takes a key.
    expect((await h.api('POST', '/api/session', undefined, { Cookie: cookie, Origin: h.server.url })).status).toBe(401);
  });

  it('lets a session change things only from its own origin', async () => {
    const signIn = await fetch(`${h.server.url}/api/session`, { method: 'POST', headers: { 'X-Service-Key': API_KEY } });
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
    const spec = { prompt: 'p', allowedDomains: ['a.test'] };
    const elsewhere = await h.api('POST', '/api/workflows', spec, { Cookie: cookie, Origin: 'https://evil.test' });
    expect(elsewhere.status).toBe(403);
    expect((await h.api('POST', '/api/workflows', spec, { Cookie: cookie })).status).toBe(403);
    expect((await h.api('POST', '/api/workflows', spec, { Cookie: cookie, Origin: h.server.url })).status).toBe(201);
    // Reading needs no Origin.
    expect((await h.api('GET', '/api/workflows', undefined, { Cookie: cookie })).status).toBe(200);
  });

  it('opens a page signed in from a login link a key holder asked for', async () => {
    expect((await h.api('POST', '/api/login-links', { route: '#/executions/e1' }, {})).status).toBe(401);
    expect((await h.api('POST', '/api/login-links', { route: 'https://evil.test/' })).status).toBe(422);
    const made = await h.api.as(loginLink)('POST', '/api/login-links', { route: '#/executions/e1' });
    expect(made.status).toBe(201);
    const link = made.body.url;
    expect(link.startsWith(`${h.server.url}/login?token=`)).toBe(true);
    expect(Date.parse(made.body.expires_at) - Date.now()).toBeGreaterThan(14 * 60_000);

    const opened = await fetch(link, { redirect: 'manual' });
    expect(opened.status).toBe(303);
    expect(opened.headers.get('location')).toBe('/#/executions/e1');
    const cookie = (opened.headers.get('set-cookie') ?? '').split(';')[0]!;
    expect((await get('/artifacts/executions/e1/output.json', { Cookie: cookie })).status).toBe(200);

    const tampered = await fetch(link.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')), { redirect: 'manual' });
    expect(tampered.status).toBe(401);
    expect(tampered.headers.get('set-cookie')).toBeNull();
    // A link works once, so one seen in a log or a history opens nothing: the same url again.
    const again = await fetch(link, { redirect: 'manual' });
    expect(again.status).toBe(401);
    expect(again.headers.get('set-cookie')).toBeNull();
  });

  it('signing out ends the session on the server: a copy of the cookie no longer opens anything', async () => {
    const signIn = await fetch(`${h.server.url}/api/session`, { method: 'POST', headers: { 'X-Service-Key': API_KEY } });
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
    const copy = cookie;
    expect((await get('/artifacts/executions/e1/output.json', { Cookie: copy })).status).toBe(200);
    const out = await fetch(`${h.server.url}/api/session`, { method: 'DELETE', headers: { Cookie: cookie, Origin: h.server.url } });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/Max-Age=0/);
    expect((await get('/artifacts/executions/e1/output.json', { Cookie: copy })).status).toBe(401);
    expect((await h.api('GET', '/api/session', undefined, { Cookie: copy })).status).toBe(401);
  });

  it('a link minted with a session cookie opens a session that ends when that one does', async () => {
    const signIn = await fetch(`${h.server.url}/api/session`, { method: 'POST', headers: { 'X-Service-Key': API_KEY } });
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
    const made = await h.api.as(loginLink)('POST', '/api/login-links', { route: '#/executions' }, { Cookie: cookie, Origin: h.server.url });
    expect(made.status).toBe(201);
    // Bound to the asking browser: without its link cookie the link opens nothing; with it, it does.
    const linkCookie = (made.headers.get('set-cookie') ?? '').split(';')[0]!;
    expect(linkCookie).toMatch(/_link=/);
    expect((await fetch(made.body.url, { redirect: 'manual' })).status).toBe(401);
    const opened = await fetch(made.body.url, { redirect: 'manual', headers: { Cookie: linkCookie } });
    expect(opened.status).toBe(303);
    const maxAge = Number(/Max-Age=(\d+)/.exec(opened.headers.get('set-cookie') ?? '')?.[1]);
    // Not a fresh 12 hours: at most what the minting session had left.
    expect(maxAge).toBeLessThan(43_200);
    expect(maxAge).toBeGreaterThan(43_200 - 600);
  });

  it('serves an artifact the same whatever the spelling of its path, and decodes it once', async () => {
    const address = new URL(h.server.url).host;
    await fs.writeFile(path.join(artifactsDir, 'executions', 'e1', '%2e.txt'), 'percent');
    for (const target of ['/%61rtifacts/executions/e1/output.json', `http://${address}/artifacts/executions/e1/output.json`, '/artifacts/executions/e1/output%2ejson']) {
      const res = await rawRequest({ method: 'GET', target, address, headers: { 'X-Service-Key': API_KEY } });
      expect(res.status, target).toBe(200);
      expect(JSON.parse(res.body), target).toEqual({ status: 'completed' });
    }
    // `%252e` is the file named `%2e.txt`, not `..`.
    const once = await rawRequest({ method: 'GET', target: '/artifacts/executions/e1/%252e.txt', address, headers: { 'X-Service-Key': API_KEY } });
    expect([once.status, once.body]).toEqual([200, 'percent']);
  });

  it.each([
    '/artifacts/../secret.txt',
    '/artifacts/%252e%252e/secret.txt',
    '/%61rtifacts/%2e%2e/secret.txt',
    '/artifacts/%2e%2e/secret.txt',
    '/artifacts/executions/%2e%2e%2f%2e%2e%2f..%2fsecret.txt',
    '/artifacts/executions/e1/link.txt',
    '/artifacts/executions/e1',
    '/artifacts/executions/e1/missing.mp4',
    '/artifacts/%00',
  ])('refuses %s', async (p) => {
    // Sent as written: fetch would resolve the dot segments before sending.
    const res = await rawRequest({ method: 'GET', target: p, address: new URL(h.server.url).host, headers: { 'X-Service-Key': API_KEY } });
    expect(res.status).toBe(404);
    expect(res.body).not.toContain('outside');
  });

  it('finds the dashboard from src and from dist alike', async () => {
    const rootDir = packageRoot();
    expect(packageRoot(path.join(rootDir, 'dist', 'local-service'))).toBe(rootDir);
    expect((await fs.stat(path.join(dashboardDir(), 'index.html'))).isFile()).toBe(true);
  });

  it('serves the dashboard without a key', async () => {
    const index = await fetch(`${h.server.url}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await index.text()).toContain('/dashboard/app.js');
    const js = await fetch(`${h.server.url}/dashboard/app.js`);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    await js.text();
    expect((await fetch(`${h.server.url}/dashboard/..%2Fserver.ts`)).status).toBe(404);
  });
});
