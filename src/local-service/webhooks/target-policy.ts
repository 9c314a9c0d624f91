import { createLookupGate } from './lookup-gate.js';
import { checkedAddress, DEFAULT_TARGET_RULES, parseTarget, systemResolve, type Checked, type Resolve, type Target, type TargetRules } from './targets.js';

/**
 * The webhooks' target rules bound to one resolver and one lookup gate (docs/api.md#webhooks):
 * made once by serve from WEBHOOK_ALLOW_PRIVATE_NETWORKS and used by the route that makes a
 * webhook and by every delivery attempt, so that the two judge a URL the same way and every
 * lookup of the process shares the same bound.
 */

/** Lookups at once: half of libuv's default thread pool, so file reads keep the rest. */
export const MAX_CONCURRENT_LOOKUPS = 2;
/** The time a lookup may take when a webhook is made, as within an attempt's 10 s. */
export const LOOKUP_TIMEOUT_MS = 10_000;

export interface TargetPolicyOptions {
  rules?: TargetRules;
  resolve?: Resolve;
  maxConcurrentLookups?: number;
}

export function createTargetPolicy(opts: TargetPolicyOptions = {}) {
  const rules = opts.rules ?? DEFAULT_TARGET_RULES;
  const resolve = opts.resolve ?? systemResolve;
  const gate = createLookupGate(opts.maxConcurrentLookups ?? MAX_CONCURRENT_LOOKUPS);
  return {
    rules,
    parse: (raw: string) => parseTarget(raw, rules),
    /** The address to connect to, judged by the rules; the lookup ends at `signal` (the attempt's time limit). */
    check: (target: Target, signal: AbortSignal): Promise<Checked> => checkedAddress(target, (host) => gate.run(resolve, host, signal), rules),
    /** Lookups in flight (tests). */
    get lookupsRunning(): number {
      return gate.running;
    },
  };
}

export type TargetPolicy = ReturnType<typeof createTargetPolicy>;
