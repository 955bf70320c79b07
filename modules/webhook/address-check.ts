import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** Address ranges a delivery may not reach unless webhooks.allow_private_networks is on, each with what it is. */
const V4_RANGES: readonly [string, number, string][] = [
  ['0.0.0.0', 8, 'an unspecified ("this network") address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a shared (carrier-grade NAT) address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.169.254', 32, 'the cloud metadata address'],
  ['169.254.0.0', 16, 'a link-local address'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'a protocol-assignment address'],
  ['192.0.2.0', 24, 'a documentation address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['198.51.100.0', 24, 'a documentation address'],
  ['203.0.113.0', 24, 'a documentation address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];
const V6_RANGES: readonly [string, number, string][] = [
  ['::', 128, 'an unspecified address'],
  ['::1', 128, 'a loopback address'],
  ['::', 96, 'an IPv4-compatible address'],
  ['100::', 64, 'a discard-only address'],
  ['2001:db8::', 32, 'a documentation address'],
  ['fc00::', 7, 'a unique-local address'],
  ['fe80::', 10, 'a link-local address'],
  ['fec0::', 10, 'a site-local address'],
  ['ff00::', 8, 'a multicast address'],
];

function blockListOf(ranges: readonly [string, number, string][], type: 'ipv4' | 'ipv6'): [BlockList, string][] {
  return ranges.map(([net, prefix, what]) => {
    const list = new BlockList();
    list.addSubnet(net, prefix, type);
    return [list, what];
  });
}
const V4 = blockListOf(V4_RANGES, 'ipv4');
const V6 = blockListOf(V6_RANGES, 'ipv6');

/** The eight 16-bit groups of an IPv6 address (with an embedded dotted IPv4 tail). */
function groups(v6: string): number[] {
  let text = v6.toLowerCase().split('%')[0]!;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, -dotted[1]!.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const middle = tail === undefined ? [] : Array(8 - left.length - right.length).fill('0');
  return [...left, ...middle, ...right].map((g) => parseInt(g, 16));
}

/** The IPv4 address an IPv6 one carries: IPv4-mapped (::ffff:a.b.c.d), NAT64 (64:ff9b::/96) or 6to4 (2002::/16). */
function embeddedV4(v6: string): string | undefined {
  const g = groups(v6);
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return v4(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return v4(g[6]!, g[7]!);
  if (g[0] === 0x2002) return v4(g[1]!, g[2]!);
  return undefined;
}

/** Why an address may not be reached (undefined: a public address). */
export function refusalOf(address: string): string | undefined {
  const family = isIP(address);
  if (family === 4) return V4.find(([list]) => list.check(address, 'ipv4'))?.[1];
  if (family !== 6) return 'not an IP address';
  const inner = embeddedV4(address);
  if (inner !== undefined) {
    const why = refusalOf(inner);
    return why ? `${why} (${inner}, in an IPv6 form)` : undefined;
  }
  return V6.find(([list]) => list.check(address, 'ipv6'))?.[1];
}

export type Target = { ok: true; address: string; family: 4 | 6 } | { ok: false; reason: string };

/**
 * Resolves the host once and checks every address it has: a name with any refused address is
 * refused. The caller connects to the address returned, never resolving again, so a name cannot
 * answer a public address to the check and a private one to the connection.
 */
export async function checkedTarget(hostname: string, allowPrivate: boolean): Promise<Target> {
  const host = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  let addresses: { address: string; family: number }[];
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await lookup(host, { all: true, verbatim: true });
    } catch (err) {
      return {
        ok: false,
        reason: `the host ${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'lookup failed'})`,
      };
    }
  }
  if (addresses.length === 0) return { ok: false, reason: `the host ${host} has no address` };
  if (!allowPrivate) {
    for (const { address } of addresses) {
      const why = refusalOf(address);
      if (why)
        return {
          ok: false,
          reason: `refused: ${host === address ? address : `${host} resolves to ${address}`}, ${why}; private networks are not allowed (webhooks.allow_private_networks)`,
        };
    }
  }
  const first = addresses[0]!;
  return { ok: true, address: first.address, family: first.family === 6 ? 6 : 4 };
}
