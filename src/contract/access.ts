/**
 * Who may use the local API, on the wire (docs/operations.md#api-keys): the API keys made in the
 * dashboard, its sessions and its login links.
 */
import { z } from 'zod';
import { isoTime } from './json.js';

/**
 * What a key's name may be: it shows in logs and in `by`, so plain characters, at most 64, and a
 * space only between two other characters (no trailing or doubled space: `"victim "` would read
 * as `victim`).
 */
export const KEY_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]*(?: [A-Za-z0-9._@-]+)*$/;
export const KEY_NAME_MAX = 64;

/**
 * What a key may do (docs/security.md#api-keys): `operator` — the API and the dashboard; `worker` —
 * the worker's reports (`started`, `completed`, `failed`, `waiting`, `resumed`) and what the
 * worker reads (`GET /api/executions/{id}`, `GET /api/workflows/{id}/versions`), nothing else.
 * The keys of API_KEYS have both.
 */
export const KEY_ROLES = ['operator', 'worker'] as const;
export const keyRole = z.enum(KEY_ROLES);
export type KeyRole = z.infer<typeof keyRole>;

/** `POST /api/keys`. */
export const apiKeyCreate = z.strictObject({
  name: z.string().max(KEY_NAME_MAX).regex(KEY_NAME).meta({
    description:
      "The key's name: 1–64 letters, digits, single spaces between them and `._@-`, starting with a letter or digit; unique whatever its case; `bootstrap-<n>` is reserved. Requests made with the key carry it as their identity.",
  }),
  role: keyRole.meta({ description: '`operator` (default): the API and the dashboard. `worker`: the worker\'s reports and what the worker reads, nothing else.' }).optional(),
});

/** A key made in the dashboard, as the API keeps it (beside its hash, which it never shows). */
export const apiKeyRecord = z.object({
  /** A uuid: what the API and the dashboard name the key by. */
  id: z.string(),
  /** Chosen by whoever made it; unique; the identity its requests carry (`by`, the logs). */
  name: z.string(),
  created_at: isoTime,
  /** Keys stored before roles were kept are operators' (what every key could do then). */
  role: keyRole.default('operator'),
  /**
   * The credential that made it: a dashboard key's tag (`k:<id>`) or a bootstrap key's digest tag.
   * The key is honoured only while that one is (transitively). Absent on keys made before this
   * was kept: they stand alone.
   */
  made_by_tag: z.string().optional(),
  /** What the listing shows of its maker: the key id, or the bootstrap key's name. */
  created_by: z.string().nullable().default(null),
});
export type ApiKeyRecord = z.infer<typeof apiKeyRecord>;

/** A key as listed: never the key itself. */
export const apiKey = z.object({
  id: z.string().meta({ description: 'A uuid; for a bootstrap key, its name.' }),
  name: z.string().meta({ description: 'The identity its requests carry (`by`, the logs). The keys of API_KEYS are `bootstrap-1`, `bootstrap-2`, … by position.' }),
  source: z.enum(['bootstrap', 'dashboard']).meta({ description: '`bootstrap`: from API_KEYS (not revocable here); `dashboard`: made with POST /api/keys.' }),
  roles: z.array(keyRole).meta({ description: 'What the key may do: `["operator", "worker"]` for a bootstrap key, the role it was made with for a dashboard key.' }),
  created_by: z.string().nullable().meta({ description: 'What made it: the id of the dashboard key, or the name of the bootstrap key (`bootstrap-2`), it was made with; null for a bootstrap key (and for a key made before this was recorded). Revoking that key revokes this one.' }),
  created_at: isoTime.nullable().meta({ description: 'null for a bootstrap key.' }),
  last_used_at: isoTime.nullable().meta({ description: 'The last request made with it or with a session it opened, to the minute; null when never used.' }),
  revocable: z.boolean(),
  current: z.boolean().meta({ description: 'Whether the request asking comes from this key (or a session it opened).' }),
});
export type ApiKeyView = z.infer<typeof apiKey>;

export const apiKeyList = z.object({ keys: z.array(apiKey) });
export type ApiKeyList = z.infer<typeof apiKeyList>;

/** The answer to `POST /api/keys`: the key's listing and the key, shown this once. */
export const apiKeyCreated = apiKey.extend({
  source: z.literal('dashboard'),
  created_at: isoTime,
  last_used_at: z.null(),
  key: z.string().meta({ description: 'The key (`ewk_` and 43 characters): shown in this answer only; the service keeps its SHA-256.' }),
});
export type ApiKeyCreated = z.infer<typeof apiKeyCreated>;

/** `GET /api/session`: how the request is signed in, and as whom (the key's name). */
export const sessionInfo = z.object({ via: z.enum(['key', 'session']), identity: z.string() });
export type SessionInfo = z.infer<typeof sessionInfo>;

/** `POST /api/login-links`. */
export const loginLinkRequest = z.strictObject({
  route: z
    .string()
    .regex(/^#\/[A-Za-z0-9/_.-]*$/)
    .max(300)
    .meta({ description: 'Dashboard route the link opens, e.g. `#/executions/{id}`. Default `#/executions`.' })
    .optional(),
  ttlSeconds: z.number().int().min(1).max(86_400).meta({ description: 'How long the link works. Default 900 (15 minutes).' }).optional(),
});

/** A login link: single use, until `expires_at`. */
export const loginLink = z.object({ url: z.string(), expires_at: isoTime });

/**
 * A dashboard session or a login link as the local API keeps it (by the digest of its id, never
 * the id): the key it was opened with, and when it ends.
 */
export const storedGrant = z.object({
  keyTag: z.string(),
  expiresAtMs: z.number(),
  /** A login link's route, and the latest end of the session it opens. */
  route: z.string().optional(),
  notAfterMs: z.number().optional(),
  /** A login link bound to the browser that asked for it: the digest of that browser's link cookie. */
  binder: z.string().optional(),
});
export type StoredGrant = z.infer<typeof storedGrant>;
