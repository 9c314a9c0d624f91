import type { BrowserSession } from '../browser/types.js';
import { storageState, type StorageState } from '../contract/storage-state.js';
import type { ProfileReport } from '../contract/profile.js';
import { ExecutionError } from '../contract/errors.js';
import { openProfile, readProfileHeader, sealProfile, type ProfileKeyring } from '../domain/profile-crypto.js';
import { profileSecrets } from '../domain/profile-secrets.js';
import type { ProfileStore } from '../storage/types.js';
import type { Logger } from '../telemetry/types.js';
import type { ExecutionEventSink } from '../execution/events.js';

/**
 * A run's browser profile (docs/profiles.md): loaded before the browser opens, saved when the
 * run completes. The runner calls `loadRunProfile` in its checks before `started` and
 * `save` between the end of the run and the browser's close; nothing else of the run knows.
 * Events and logs carry counts and hosts, never a cookie or storage value.
 */

export interface ProfileSettings {
  store: ProfileStore;
  /** PROFILE_KEYS; without them a specification with `profile` is refused. */
  keys?: ProfileKeyring;
  /** PROFILE_MAX_BYTES: a bigger state is not saved. */
  maxBytes: number;
}

export class RunProfile {
  readonly report: ProfileReport;

  private constructor(
    readonly id: string,
    /** The state put into the browser; undefined for an empty or unreadable profile. */
    readonly state: StorageState | undefined,
    private readonly settings: ProfileSettings & { keys: ProfileKeyring },
    private readonly events: ExecutionEventSink,
    private readonly log: Logger,
  ) {
    this.report = { id, loaded: state !== undefined, saved: false, cookies: state?.cookies.length ?? 0, origins: state?.origins.length ?? 0, stale: false };
  }

  /** The state's values long enough to be told apart from ordinary text, and the tokens inside them: redacted wherever they would show. */
  secrets(): string[] {
    return this.state ? profileSecrets(this.state) : [];
  }

  /** The session options that put the state in and watch the sign-in. */
  sessionOptions(): { storageState?: StorageState; watchSignIn: boolean } {
    return { ...(this.state ? { storageState: this.state } : {}), watchSignIn: this.state !== undefined };
  }

  /** After the run: a loaded sign-in that met a sign-in page was stale. */
  noteSignIn(session: BrowserSession): void {
    if (this.report.loaded && this.report.cookies > 0 && session.signInSeen?.()) {
      this.report.stale = true;
      this.events.emit('profile_stale', { id: this.id });
    }
  }

  /**
   * Replaces the saved state with the session's (allowed hosts only), unless a run that ended
   * later has saved already. A failure to save is logged; the run's outcome stands.
   */
  async save(session: BrowserSession, endedAtMs: number, signal: AbortSignal): Promise<void> {
    const { store, keys, maxBytes } = this.settings;
    try {
      if (!session.storageState) throw new Error('this browser cannot read its state');
      const state = await session.storageState(signal);
      const plain = Buffer.byteLength(JSON.stringify(state));
      if (plain > maxBytes) {
        this.skip(`the state is ${plain} bytes, more than PROFILE_MAX_BYTES (${maxBytes})`);
        return;
      }
      const savedAt = new Date(endedAtMs).toISOString();
      // The later completed run wins: a blob saved by a run that ended after this one stays.
      const current = await store.read(this.id, signal);
      const header = current ? readProfileHeader(current) : undefined;
      if (header?.ok && header.header.savedAt > savedAt) {
        this.skip(`a run that ended later (${header.header.savedAt}) saved it already`);
        return;
      }
      const hosts = [...new Set([...state.cookies.map((c) => c.domain.replace(/^\./, '')), ...state.origins.map((o) => new URL(o.origin).host)])].sort();
      const blob = sealProfile(this.id, state, keys, { savedAt, hosts, cookies: state.cookies.length, origins: state.origins.length });
      await store.write(this.id, blob, signal);
      Object.assign(this.report, { saved: true, cookies: state.cookies.length, origins: state.origins.length });
      this.events.emit('profile_saved', { id: this.id, cookies: state.cookies.length, origins: state.origins.length, hosts, bytes: blob.length, keyId: keys.current.id });
    } catch (error) {
      this.log.error({ profile: this.id, err: error instanceof Error ? error.message : String(error) }, 'the browser profile could not be saved');
      this.skip(`could not be saved: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** Refuses (`invalid_specification`) a profile this worker could only store unencrypted. */
  static usable(settings: ProfileSettings | undefined, id: string): ProfileSettings & { keys: ProfileKeyring } {
    if (!settings?.keys) {
      throw new ExecutionError('invalid_specification', `profile "${id}": this worker has no PROFILE_KEYS, and a profile is never stored unencrypted`);
    }
    return { ...settings, keys: settings.keys };
  }

  private skip(reason: string): void {
    this.log.warn({ profile: this.id, reason }, 'browser profile not saved');
    this.events.emit('profile_not_saved', { id: this.id, reason });
  }

  /**
   * Reads and decrypts a profile. Refuses (`invalid_specification`) without PROFILE_KEYS; a
   * blob that cannot be read, or a store that cannot be reached, counts as empty (logged).
   */
  static async load(settings: ProfileSettings | undefined, id: string, events: ExecutionEventSink, log: Logger, signal: AbortSignal): Promise<RunProfile> {
    const keyed = RunProfile.usable(settings, id);
    let blob: Buffer | undefined;
    try {
      blob = await keyed.store.read(id, signal);
    } catch (error) {
      signal.throwIfAborted();
      const reason = `the store could not be read: ${error instanceof Error ? error.message : String(error)}`;
      log.warn({ profile: id, reason }, 'browser profile unreadable; starting empty');
      events.emit('profile_unreadable', { id, reason });
      return new RunProfile(id, undefined, keyed, events, log);
    }
    if (!blob) {
      events.emit('profile_loaded', { id, loaded: false, cookies: 0, origins: 0 });
      return new RunProfile(id, undefined, keyed, events, log);
    }
    const opened = openProfile(id, blob, keyed.keys);
    const state = opened.ok ? asState(opened.state) : undefined;
    if (!state) {
      const reason = opened.ok ? 'the decrypted state is not a browser state' : opened.reason;
      log.warn({ profile: id, reason }, 'browser profile unreadable; starting empty');
      events.emit('profile_unreadable', { id, reason });
      return new RunProfile(id, undefined, keyed, events, log);
    }
    events.emit('profile_loaded', { id, loaded: true, cookies: state.cookies.length, origins: state.origins.length, savedAt: opened.ok ? opened.header.savedAt : undefined });
    return new RunProfile(id, state, keyed, events, log);
  }
}

function asState(value: unknown): StorageState | undefined {
  const read = storageState.safeParse(value);
  return read.success ? read.data : undefined;
}
