import dns from 'node:dns';
import net from 'node:net';
import { embeddedIpv4 } from '../../domain/ip-embedding.js';
import { LookupTimedOut } from './lookup-gate.js';

/**
 * Where a webhook may deliver (docs/api.md#webhooks). The receiver is the operator's own choice,
 * made with an operator's key, so loopback (a developer's receiver) is allowed; private networks
 * (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7: an intranet service, or what an attacker
 * wants a server to map) only when `WEBHOOK_ALLOW_PRIVATE_NETWORKS=true`. Always refused is what
 * no receiver is and what an attacker wants a server to call: link-local addresses, where the
 * cloud metadata services answer (169.254.169.254, AWS's fd00:ec2::/32), and addresses that are
 * no single host (unspecified, multicast, broadcast, reserved).
 *
 * The URL is read by WHATWG URL, which writes an IPv4 address in one form whatever the caller's
 * spelling (`2852039166`, `0xa9fea9fe`, `0251.0376.0251.0376` all read `169.254.169.254`) and an
 * IPv6 one canonically (`[::ffff:169.254.169.254]` reads `[::ffff:a9fe:a9fe]`); an IPv6 address
 * that embeds an IPv4 one (mapped, translated, compatible, NAT64 incl. 64:ff9b:1::/48, 6to4, Teredo) is judged by
 * the IPv4 address. A name is judged by every address it resolves to, when the webhook is made
 * and again at each delivery, and the delivery connects to the very address it checked (send.ts):
 * no second lookup. The rules are one value (`createTargetPolicy`), made once by serve and used by
 * both the route that makes a webhook and every attempt, so the two cannot judge differently.
 */

const REFUSED = new net.BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8], // "this network"; 0.0.0.0 reaches the host itself by accident, never by design
  ['169.254.0.0', 16], // link-local: cloud metadata (169.254.169.254), link-local services
  ['100.100.100.200', 32], // Alibaba Cloud metadata
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  REFUSED.addSubnet(prefix, bits, 'ipv4');
}
for (const [prefix, bits] of [
  ['::', 128], // unspecified
  ['fe80::', 10], // link-local
  ['fd00:ec2::', 32], // AWS's own prefix, metadata (fd00:ec2::254) and DNS (fd00:ec2::253) over IPv6
  ['ff00::', 8], // multicast
] as const) {
  REFUSED.addSubnet(prefix, bits, 'ipv6');
}

/** Refused unless private networks are allowed: the private and shared (CGNAT) ranges. */
const PRIVATE = new net.BlockList();
for (const [prefix, bits] of [['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16], ['100.64.0.0', 10]] as const) PRIVATE.addSubnet(prefix, bits, 'ipv4');
PRIVATE.addSubnet('fc00::', 7, 'ipv6');

/** What the policy allows besides public addresses and loopback. */
export interface TargetRules {
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: private and CGNAT ranges may be receivers. Default false. */
  allowPrivateNetworks: boolean;
}

export const DEFAULT_TARGET_RULES: TargetRules = { allowPrivateNetworks: false };

const NON_HOST = 'a link-local, metadata or non-host address';
const PRIVATE_ADDRESS = 'a private network address (WEBHOOK_ALLOW_PRIVATE_NETWORKS is not set)';

/** What kind of refused address `bare` (an IP literal) is, or undefined when it may be a receiver. */
function refusedKind(bare: string, rules: TargetRules): string | undefined {
  if (net.isIPv4(bare)) {
    if (REFUSED.check(bare, 'ipv4')) return NON_HOST;
    return !rules.allowPrivateNetworks && PRIVATE.check(bare, 'ipv4') ? PRIVATE_ADDRESS : undefined;
  }
  if (!net.isIPv6(bare)) return 'not an IP address';
  const v4 = embeddedIpv4(bare);
  if (v4 !== undefined) return refusedKind(v4, rules);
  if (REFUSED.check(bare, 'ipv6')) return NON_HOST;
  return !rules.allowPrivateNetworks && PRIVATE.check(bare, 'ipv6') ? PRIVATE_ADDRESS : undefined;
}

/** Why a receiver must not be sent to `address` (an IP literal), or undefined when it may. */
export function refusedAddress(address: string, rules: TargetRules = DEFAULT_TARGET_RULES): string | undefined {
  const bare = address.replace(/^\[|\]$/g, '');
  const kind = refusedKind(bare, rules);
  return kind === undefined ? undefined : `${bare} is ${kind}`;
}

/** A receiver URL as WHATWG URL reads it, and its host without brackets. */
export interface Target {
  url: URL;
  /** The hostname, an IPv6 literal without its brackets. */
  host: string;
  port: number;
}

/** The URL as a receiver, or why it is not one (the reason names no secret: URLs with credentials are refused). */
export function parseTarget(raw: string, rules: TargetRules = DEFAULT_TARGET_RULES): { ok: true; target: Target } | { ok: false; reason: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'is not a URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: 'must be an http:// or https:// URL' };
  if (url.username !== '' || url.password !== '') return { ok: false, reason: 'must not carry a user name or password' };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  if (net.isIP(host) !== 0) {
    const refused = refusedAddress(host, rules);
    if (refused) return { ok: false, reason: `is refused: ${refused}` };
  }
  return { ok: true, target: { url, host, port } };
}

/** Resolves a name to its addresses (the system resolver by default; tests give their own). */
export type Resolve = (host: string) => Promise<string[]>;

/**
 * getaddrinfo, as every other program on the host resolves: the names of /etc/hosts (`localhost`,
 * a container's or a developer's loopback names) are receivers too, and `dns.promises.Resolver`
 * reads no /etc/hosts. Its cost — it runs on libuv's thread pool, shared with file reads, and has
 * no time limit of its own — is paid by the policy: lookups are bounded in number and each is
 * raced against the attempt's time limit (lookup-gate.ts).
 */
export const systemResolve: Resolve = async (host) => (await dns.promises.lookup(host, { all: true, verbatim: true })).map((r) => r.address);

export type Checked = { ok: true; address: string } | { ok: false; reason: string };

/**
 * The address to connect to for `target`: the literal itself, or the first address the name
 * resolves to when none of them is refused. A name with one refused address is refused whole:
 * which address a client picks is not ours to guess. The reason names the kind of address, not
 * the address a name resolved to: the attempt list must not be a way to read the host's DNS.
 */
export async function checkedAddress(target: Target, resolve: Resolve, rules: TargetRules = DEFAULT_TARGET_RULES): Promise<Checked> {
  if (net.isIP(target.host) !== 0) {
    const refused = refusedAddress(target.host, rules);
    return refused ? { ok: false, reason: refused } : { ok: true, address: target.host };
  }
  let addresses: string[];
  try {
    addresses = await resolve(target.host);
  } catch (error) {
    if (error instanceof LookupTimedOut) return { ok: false, reason: `${target.host}: the lookup timed out` };
    return { ok: false, reason: `${target.host} does not resolve` };
  }
  if (addresses.length === 0) return { ok: false, reason: `${target.host} does not resolve` };
  for (const address of addresses) {
    const kind = refusedKind(address.replace(/^\[|\]$/g, ''), rules);
    if (kind) return { ok: false, reason: `${target.host} resolves to ${kind}` };
  }
  return { ok: true, address: addresses[0]! };
}
