import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BrowserSession } from '../../src/browser/types.js';
import type { StorageState } from '../../src/contract/storage-state.js';
import { openProfile, parseProfileKeys, readProfileHeader, sealProfile } from '../../src/domain/profile-crypto.js';
import { createExecutionEvents, type ExecutionEventStream } from '../../src/execution/events.js';
import { RunProfile, type ProfileSettings } from '../../src/runner/profile.js';
import type { ProfileStore } from '../../src/storage/types.js';
import { createEventLog } from '../../src/telemetry/event-log.js';
import { createSilentLogger } from '../../src/telemetry/logger.js';
import { tempDir } from '../support/env.js';

/** The runner's profile hooks with an in-memory store and a session that only has a state. */

const ring = parseProfileKeys(`k1:${randomBytes(32).toString('base64')}`);
const signal = new AbortController().signal;
const cookie = (value: string) => ({ name: 'sid', value, domain: 'app.test', path: '/', expires: -1, httpOnly: true, secure: false, sameSite: 'Lax' as const });
const STATE: StorageState = { cookies: [cookie('session-value-0123456789')], origins: [{ origin: 'http://app.test', localStorage: [{ name: 'k', value: 'short' }] }] };

function memoryStore(): ProfileStore & { blobs: Map<string, Buffer> } {
  const blobs = new Map<string, Buffer>();
  return {
    blobs,
    read: async (id) => blobs.get(id),
    write: async (id, blob) => void blobs.set(id, blob),
    delete: async (id) => blobs.delete(id),
    list: async () => [...blobs].map(([id, b]) => ({ id, bytes: b.length, updatedAt: new Date().toISOString() })),
  };
}

const sessionWith = (state: StorageState, signIn = false) => ({ storageState: async () => state, signInSeen: () => signIn }) as unknown as BrowserSession;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function events(): Promise<{ log: ExecutionEventStream; seen: Array<{ type: string; fields: Record<string, unknown> }> }> {
  const dir = await tempDir('run-profile');
  const seen: Array<{ type: string; fields: Record<string, unknown> }> = [];
  const log = createExecutionEvents({ executionId: 'e1', redact: (v) => v });
  const file = createEventLog(path.join(dir, 'logs.jsonl'));
  log.onLine((line) => {
    const { ts: _ts, t: _t, type, executionId: _id, ...fields } = line;
    seen.push({ type, fields });
    file.write(line);
  });
  cleanups.push(async () => {
    await file.close();
    await rm(dir, { recursive: true, force: true });
  });
  return { log, seen };
}

const settings = (store: ProfileStore, maxBytes = 1_000_000): ProfileSettings => ({ store, keys: ring, maxBytes });

describe('the run profile hooks', () => {
  it('refuses without keys, and starts empty when there is nothing saved', async () => {
    const { log } = await events();
    const store = memoryStore();
    await expect(RunProfile.load({ store, maxBytes: 1 }, 'p', log, createSilentLogger(), signal)).rejects.toMatchObject({ code: 'invalid_specification' });
    const empty = await RunProfile.load(settings(store), 'p', log, createSilentLogger(), signal);
    expect(empty.report).toEqual({ id: 'p', loaded: false, saved: false, cookies: 0, origins: 0, stale: false });
    expect(empty.sessionOptions()).toEqual({ watchSignIn: false });
  });

  it('loads a saved state, offers its long values for redaction, saves the new one and notes a stale sign-in', async () => {
    const { log, seen } = await events();
    const store = memoryStore();
    store.blobs.set('p', sealProfile('p', STATE, ring, { savedAt: '2026-01-01T00:00:00.000Z', hosts: ['app.test'], cookies: 1, origins: 1 }));
    const profile = await RunProfile.load(settings(store), 'p', log, createSilentLogger(), signal);
    expect(profile.report).toMatchObject({ loaded: true, cookies: 1, origins: 1 });
    expect(profile.secrets()).toEqual(['session-value-0123456789']);
    expect(profile.sessionOptions()).toEqual({ storageState: STATE, watchSignIn: true });
    const next: StorageState = { cookies: [cookie('session-value-new-abcdef'), { ...cookie('x'), name: 'layout' }], origins: [] };
    const session = sessionWith(next, true);
    profile.noteSignIn(session);
    await profile.save(session, Date.parse('2026-02-01T00:00:00.000Z'), signal);
    expect(profile.report).toEqual({ id: 'p', loaded: true, saved: true, cookies: 2, origins: 0, stale: true });
    expect(openProfile('p', store.blobs.get('p')!, ring)).toMatchObject({ ok: true, state: next, header: { savedAt: '2026-02-01T00:00:00.000Z', hosts: ['app.test'] } });
    expect(seen.map((e) => e.type)).toEqual(['profile_loaded', 'profile_stale', 'profile_saved']);
    expect(JSON.stringify(seen)).not.toContain('session-value');
  });

  it('does not replace a profile that a run ending later saved, nor save a state over PROFILE_MAX_BYTES', async () => {
    const { log, seen } = await events();
    const store = memoryStore();
    const later = sealProfile('p', STATE, ring, { savedAt: '2026-03-01T00:00:00.000Z', hosts: ['app.test'], cookies: 1, origins: 1 });
    const early = await RunProfile.load(settings(store), 'p', log, createSilentLogger(), signal);
    store.blobs.set('p', later);
    await early.save(sessionWith(STATE), Date.parse('2026-02-01T00:00:00.000Z'), signal);
    expect(store.blobs.get('p')).toBe(later);
    expect(early.report.saved).toBe(false);
    expect(seen.at(-1)).toMatchObject({ type: 'profile_not_saved', fields: { reason: 'a run that ended later (2026-03-01T00:00:00.000Z) saved it already' } });

    const big = await RunProfile.load(settings(store, 100), 'p', log, createSilentLogger(), signal);
    await big.save(sessionWith(STATE), Date.parse('2026-04-01T00:00:00.000Z'), signal);
    expect(store.blobs.get('p')).toBe(later);
    expect(seen.at(-1)).toMatchObject({ type: 'profile_not_saved', fields: { reason: expect.stringMatching(/^the state is \d+ bytes, more than PROFILE_MAX_BYTES \(100\)$/) } });
    // A run that ends later than the saved one replaces it.
    const latest = await RunProfile.load(settings(store), 'p', log, createSilentLogger(), signal);
    await latest.save(sessionWith(STATE), Date.parse('2026-05-01T00:00:00.000Z'), signal);
    expect(readProfileHeader(store.blobs.get('p')!)).toMatchObject({ ok: true, header: { savedAt: '2026-05-01T00:00:00.000Z' } });
  });
});
