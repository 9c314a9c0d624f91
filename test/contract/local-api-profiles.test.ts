import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProfileDirectory } from '../../src/compose.js';
import { loadConfig } from '../../src/config/schema.js';
import { errorBody } from '../../src/contract/api-errors.js';
import { execution } from '../../src/contract/executions.js';
import { openApiDocument } from '../../src/contract/openapi-document.js';
import { profileList } from '../../src/contract/profile.js';
import { workflow } from '../../src/contract/workflows.js';
import { parseProfileKeys, sealProfile } from '../../src/domain/profile-crypto.js';
import { createLocalProfileStore } from '../../src/storage/profile-store.js';
import { CHROMIUM_ARGS } from '../support/screencast-session.js';
import { API_KEY, expectDetailShape, ISO, startHarness, type Harness } from './local-api-harness.js';

/**
 * The profiles endpoints of the local API (docs/profiles.md) and the dashboard's list, on real
 * Redis, over the local folder the workers keep profiles in: ids, hosts, when and size, never
 * a value, and deletion.
 */

const VALUE = 'cookie-value-3c9e1f7a2b';
const ring = parseProfileKeys(`k1:${randomBytes(32).toString('base64')}`);
let h: Harness;
let dir: string;
let directory: ReturnType<typeof createProfileDirectory>;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'profiles-api-'));
  const store = createLocalProfileStore({ dir, prefix: 'prod/' });
  const state = { cookies: [{ name: 'sid', value: VALUE, domain: 'crm.test', path: '/', expires: -1, httpOnly: true, secure: false, sameSite: 'Lax' }], origins: [] };
  for (const id of ['tenant-a.crm', 'tenant-b.erp']) {
    await store.write(id, sealProfile(id, state, ring, { savedAt: '2026-11-24T10:00:00.000Z', hosts: ['crm.test'], cookies: 1, origins: 0 }));
  }
  directory = createProfileDirectory(loadConfig({ ARTIFACTS_DIR: dir, S3_PREFIX: 'prod/' }));
  h = await startHarness({ profiles: directory, artifactsDir: dir, network: true });
});

afterAll(async () => {
  await h?.close();
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

describe('GET /api/profiles and DELETE /api/profiles/{id}', () => {
  it('lists each profile without any value, and deletes one', async () => {
    const listed = await h.api.as(profileList)('GET', '/api/profiles');
    expect(listed.status).toBe(200);
    expect(listed.body.profiles).toEqual([
      { id: 'tenant-a.crm', hosts: ['crm.test'], updated: '2026-11-24T10:00:00.000Z', size: expect.any(Number) },
      { id: 'tenant-b.erp', hosts: ['crm.test'], updated: expect.stringMatching(ISO), size: expect.any(Number) },
    ]);
    expect(JSON.stringify(listed.body)).not.toContain(VALUE);

    expect((await h.api('DELETE', '/api/profiles/tenant-a.crm')).status).toBe(204);
    const missing = await h.api.as(errorBody)('DELETE', '/api/profiles/tenant-a.crm');
    expect(missing.status).toBe(404);
    expectDetailShape(missing.body);
    expect((await h.api.as(profileList)('GET', '/api/profiles')).body.profiles.map((p) => p.id)).toEqual(['tenant-b.erp']);
    await expect(fs.stat(path.join(dir, 'prod', 'profiles', 'tenant-a.crm'))).rejects.toThrow(/ENOENT/);
  });

  it('needs a key, and is in the OpenAPI document', async () => {
    expect((await h.api('GET', '/api/profiles', undefined, {})).status).toBe(401);
    expect((await h.api('DELETE', '/api/profiles/tenant-b.erp', undefined, { 'X-Service-Key': 'wrong' })).status).toBe(401);
    const doc = (await h.api.as(openApiDocument)('GET', '/openapi.json')).body;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/api/profiles', '/api/profiles/{profileId}']));
    expect(doc.components.schemas.Profile!.required).toEqual(['id', 'hosts', 'updated', 'size']);
  });
});

describe('the dashboard', () => {
  let browser: Browser;
  afterAll(async () => browser?.close());

  it('lists profiles with their hosts and deletes one', async () => {
    const store = createLocalProfileStore({ dir, prefix: 'prod/' });
    await store.write('tenant-c.crm', sealProfile('tenant-c.crm', { cookies: [], origins: [] }, ring, { savedAt: '2026-11-24T11:00:00.000Z', hosts: ['erp.test'], cookies: 0, origins: 0 }));
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
    const page = await browser.newPage();
    page.on('dialog', (dialog) => void dialog.accept());
    await page.request.post(`${h.server.url}/api/session`, { headers: { 'X-Service-Key': API_KEY } });
    await page.goto(`${h.server.url}/#/profiles`);
    const row = page.locator('[data-testid=profile-row][data-id="tenant-c.crm"]');
    await expect.poll(() => row.textContent()).toContain('erp.test');
    await row.locator('[data-testid=delete-profile]').click();
    await expect.poll(() => page.locator('[data-testid=profile-row]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-id')))).toEqual(['tenant-b.erp']);
    expect(await store.read('tenant-c.crm')).toBeUndefined();
  });

  it("shows an execution's profile, and says when its saved sign-in was stale", async () => {
    const created = await h.api.as(workflow)('POST', '/api/workflows', { name: 'CRM', prompt: 'Open the account', allowedDomains: ['crm.test'], profile: 'tenant-b.erp' });
    expect(created.body.current_version!.specification.profile).toBe('tenant-b.erp');
    const executed = await h.api.as(execution)('POST', `/api/workflows/${created.body.workflow_uuid}/execute`, { inputPayload: {} });
    const id = executed.body.execution_uuid;
    await fs.mkdir(path.join(dir, 'executions', id), { recursive: true });
    const profile = { id: 'tenant-b.erp', loaded: true, saved: true, cookies: 2, origins: 1, stale: true };
    await fs.writeFile(path.join(dir, 'executions', id, 'output.json'), JSON.stringify({ status: 'completed', output: {}, error: null, profile }));
    await h.api('POST', `/api/executions/${id}/started`, { startedAt: new Date().toISOString() });
    const counters = { durationMs: 10, nSteps: 1, nAgentActions: 0, nScreenshots: 1, outputUrl: null, videoUrl: null, logsUrl: null };
    expect((await h.api('POST', `/api/executions/${id}/completed`, { completedAt: new Date().toISOString(), ...counters })).status).toBe(200);
    const page = await browser.newPage();
    await page.request.post(`${h.server.url}/api/session`, { headers: { 'X-Service-Key': API_KEY } });
    await page.goto(`${h.server.url}/#/executions/${id}`);
    await expect.poll(() => page.getByTestId('profile').textContent(), { timeout: 15_000 }).toBe(
      'Profile tenant-b.erp: loaded, saved (2 cookies, 1 origins). The saved sign-in no longer worked: the run signed in again.',
    );
  });
});
