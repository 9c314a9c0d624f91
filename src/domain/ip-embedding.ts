/**
 * The IPv4 address an IPv6 address carries, decoded once for every place that judges an outside
 * address (the browser's egress proxy, webhook targets): a form that hides a refused IPv4
 * address inside an IPv6 one is judged by that IPv4 address wherever it is met.
 */
/** The IPv4 address an IPv6 address carries (mapped, translated, compatible, NAT64, 6to4, Teredo), if any. */
export function embeddedIpv4(address: string): string | undefined {
  const groups = expandIpv6(new URL(`http://[${address}]/`).hostname.slice(1, -1));
  if (groups === undefined) return undefined;
  const v4 = (hi: number, lo: number): string => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const zeros = (from: number, to: number): boolean => groups.slice(from, to).every((g) => g === 0);
  if (zeros(0, 5) && groups[5] === 0xffff) return v4(groups[6] ?? 0, groups[7] ?? 0);
  // ::ffff:0:a.b.c.d, RFC 2765's translated form (::ffff:0:0/96).
  if (zeros(0, 4) && groups[4] === 0xffff && groups[5] === 0) return v4(groups[6] ?? 0, groups[7] ?? 0);
  // ::a.b.c.d (the deprecated compatible form); `::` and `::1` are IPv6's own.
  if (zeros(0, 6) && !(groups[6] === 0 && (groups[7] ?? 0) <= 1)) return v4(groups[6] ?? 0, groups[7] ?? 0);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)) return v4(groups[6] ?? 0, groups[7] ?? 0);
  // RFC 8215's local-use NAT64 prefix 64:ff9b:1::/48, whatever the operator's length: the last 32 bits.
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups[2] === 1) return v4(groups[6] ?? 0, groups[7] ?? 0);
  if (groups[0] === 0x2002) return v4(groups[1] ?? 0, groups[2] ?? 0);
  // Teredo (2001::/32): the client's IPv4 address is the last 32 bits, XOR 0xffffffff.
  if (groups[0] === 0x2001 && groups[1] === 0) return v4(~(groups[6] ?? 0) & 0xffff, ~(groups[7] ?? 0) & 0xffff);
  return undefined;
}

function expandIpv6(text: string): number[] | undefined {
  const [head = '', tail] = text.split('::');
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const missing = 8 - left.length - right.length;
  if (missing < 0 || (tail === undefined && missing !== 0)) return undefined;
  return [...left, ...new Array<number>(missing).fill(0), ...right];
}
