/**
 * A browser context's sign-in state (docs/profiles.md): its cookies and each origin's
 * localStorage, as a profile keeps it sealed at rest and the browser takes it back. Every value is
 * a secret: it never goes to a log, an artifact or the model. A cookie keeps the fields a newer
 * browser adds (loose), so a profile read back is the profile saved.
 */
import { z } from 'zod';

export const storedCookie = z.looseObject({
  name: z.string(),
  value: z.string(),
  domain: z.string(),
  path: z.string(),
  /** Unix seconds; -1 for a session cookie. */
  expires: z.number(),
  httpOnly: z.boolean(),
  secure: z.boolean(),
  sameSite: z.enum(['Strict', 'Lax', 'None']),
});
export type StoredCookie = z.infer<typeof storedCookie>;

export const storedOrigin = z.object({
  origin: z.string(),
  localStorage: z.array(z.object({ name: z.string(), value: z.string() })),
});
export type StoredOrigin = z.infer<typeof storedOrigin>;

export const storageState = z.object({ cookies: z.array(storedCookie), origins: z.array(storedOrigin) });
export type StorageState = z.infer<typeof storageState>;
