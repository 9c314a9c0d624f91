/**
 * Browser profiles on the wire (docs/profiles.md): the id a specification names, the clear
 * header of a stored profile (what `GET /api/profiles` lists without a key), the local API's
 * listing, and `output.json`'s `profile`.
 */
import { z } from 'zod';
import { count, isoTime } from './json.js';

/** A profile id: letters, digits, `.`, `_`, `-`; at most 128. `.` and `..` are refused: an id is also a file name. */
export const PROFILE_ID = /^[A-Za-z0-9._-]{1,128}$/;

export function profileIdProblem(id: string): string | undefined {
  if (!PROFILE_ID.test(id)) return 'must be 1 to 128 letters, digits, ".", "_" or "-"';
  if (id === '.' || id === '..') return 'must not be "." or ".."';
  return undefined;
}

/** A profile id as a specification gives it; the JSON Schema states the same rule as `pattern` and `not`. */
export const profileId = z
  .string({ message: 'must be a string' })
  .superRefine((id, ctx) => {
    const problem = profileIdProblem(id);
    if (problem) ctx.addIssue({ code: 'custom', message: problem, params: { keyword: 'pattern' } });
  })
  .meta({ pattern: PROFILE_ID.source, not: { enum: ['.', '..'] } });

/**
 * The clear header of a stored profile (docs/profiles.md#at-rest): bound to the ciphertext as
 * associated data, so it cannot be changed without the blob failing to open. Profiles saved
 * before the counts existed have none: 0.
 */
export const profileHeader = z.object({
  /** Key id that encrypted it. */
  kid: z.string(),
  /** ISO time the run that saved it ended. */
  savedAt: z.string(),
  /** Hosts the state has cookies or storage for. */
  hosts: z.array(z.string()),
  cookies: count.default(0),
  origins: count.default(0),
});
export type ProfileHeader = z.infer<typeof profileHeader>;

/** One profile as the local API lists it: never a value. */
export const profileSummary = z.object({
  id: z.string(),
  /** Hosts the saved state has cookies or storage for. */
  hosts: z.array(z.string()),
  /** ISO time of the last save. */
  updated: isoTime,
  size: z.number().int().meta({ description: 'Bytes stored, encrypted.' }),
});
export type ProfileSummary = z.infer<typeof profileSummary>;

export const profileList = z.object({ profiles: z.array(profileSummary) });
export type ProfileList = z.infer<typeof profileList>;

/** `output.json`'s `profile` (counts, no values). */
export const profileReport = z.object({
  id: z.string(),
  /** A saved state was read and put into the browser. */
  loaded: z.boolean(),
  /** The run's state replaced the saved one. */
  saved: z.boolean(),
  /** Cookies and origins of the state saved, else of the state loaded. */
  cookies: count,
  origins: count,
  /** The loaded sign-in no longer worked: a page asked for a sign-in again. */
  stale: z.boolean(),
});
export type ProfileReport = z.infer<typeof profileReport>;
