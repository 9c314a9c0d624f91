import { isIP } from 'node:net';
import { z } from 'zod';
import { parsePublicHost, publicHostEntries, type PublicHost } from '../domain/public-hosts.js';
import { bool, int, parseEnvironment } from './env.js';
import { configSchema, WORKER_VARIABLES } from './schema.js';

/**
 * What `execution-worker serve` reads besides the worker's settings (docs/configuration.md#the-local-api),
 * parsed with them once at start: one message names every bad variable of either.
 */

/** A host name as DNS writes one: labels of letters, digits and inner hyphens. */
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i;

export const serveSettingsSchema = z.object({
  /** Port the local API listens on; 0 picks a free one. Default 8080. */
  PORT: int(0, 65_535).default(8080),
  /** Interface it listens on (`0.0.0.0`: every interface). Default 127.0.0.1: this machine only. */
  HOST: z
    .string()
    .trim()
    .refine((host) => isIP(host) !== 0 || HOST_NAME.test(host), 'must be an IP address (0.0.0.0 for every interface) or a host name')
    .default('127.0.0.1'),
  /** Bootstrap keys accepted in `X-Service-Key`, comma-separated. Required. Secret. */
  API_KEYS: z
    .string({ error: 'set at least one key (comma-separated) for X-Service-Key' })
    .transform((text) => text.split(',').map((key) => key.trim()).filter((key) => key !== ''))
    .pipe(z.array(z.string()).min(1, 'set at least one key (comma-separated) for X-Service-Key')),
  /** Names (`name` or `name:port`) the service answers for besides its own address. Default none. */
  PUBLIC_HOSTS: z
    .string()
    .default('')
    .transform((text, ctx): PublicHost[] => {
      const hosts: PublicHost[] = [];
      for (const entry of publicHostEntries(text)) {
        const host = parsePublicHost(entry);
        if (host) hosts.push(host);
        else ctx.addIssue({ code: 'custom', message: `"${entry}" is not a host name or a host:port` });
      }
      return hosts;
    }),
  /**
   * Pauses before each retry of a webhook delivery, in ms, comma-separated (docs/api.md#webhooks).
   * Default Standard Webhooks' schedule, 5 s … 10 h, 27 h 35 min in all.
   */
  WEBHOOK_RETRY_SCHEDULE_MS: z
    .string()
    .default('5000,300000,1800000,7200000,18000000,36000000,36000000')
    .transform((text) => text.split(',').map((p) => p.trim()).filter((p) => p !== '').map(Number))
    .pipe(z.array(z.number().int().min(0).max(86_400_000, 'at most a day per pause')).min(1, 'give at least one pause').max(100, 'at most 100 retries')),
  /**
   * Webhook receivers may be on private networks (10/8, 172.16/12, 192.168/16, 100.64/10,
   * fc00::/7) (docs/api.md#webhooks). Default false: public addresses and loopback only.
   */
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: bool.default(false),
  /** Tests only: schedules may fire every second instead of at most once a minute. Default false. */
  TEST_ONLY_SCHEDULE_EVERY_SECOND: bool.default(false),
});

export type ServeSettings = z.output<typeof serveSettingsSchema>;

const serveConfigSchema = configSchema.extend(serveSettingsSchema.shape);

export type ServeConfig = z.output<typeof serveConfigSchema>;

/** The worker's settings and serve's own, from `env`; throws one ConfigError naming every bad variable. */
export function loadServeConfig(env: NodeJS.ProcessEnv = process.env): ServeConfig {
  return parseEnvironment(serveConfigSchema, env, { ...WORKER_VARIABLES, secret: new Set([...WORKER_VARIABLES.secret, 'API_KEYS']) });
}
