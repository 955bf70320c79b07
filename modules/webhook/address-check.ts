import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * What each special-purpose range of the classifier (ipaddr.js `range()`, which follows the IANA
 * special-purpose registries) is, in words. Every range but `unicast` is refused; a range missing
 * here is refused too, under its classifier name.
 */
const RANGE_WORDS: Readonly<Record<string, string>> = {
  unspecified: 'an unspecified ("this network") address',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  carrierGradeNat: 'a shared (carrier-grade NAT) address',
  private: 'a private address',
  reserved: 'a reserved or documentation address',
  benchmarking: 'a benchmarking address',
  as112: 'an AS112 (reverse-lookup sink) address',
  as112v6: 'an AS112 (reverse-lookup sink) address',
  amt: 'an AMT relay address',
  uniqueLocal: 'a unique-local address',
  deprecatedSiteLocal: 'a site-local address',
  discard: 'a discard-only address',
  segmentRouting: 'a segment-routing address',
  orchid2: 'an ORCHID (overlay identifier) address',
  deprecatedOrchid: 'an ORCHID (overlay identifier) address',
  droneRemoteIdProtocolEntityTags: 'a drone remote-ID tag',
  teredo: 'a Teredo (IPv4 tunnel) address',
};

/** The cloud providers' instance metadata service: link-local, named on its own as it is what an attacker is after. */
const METADATA = ipaddr.parse('169.254.169.254');
/** NAT64's well-known prefix (RFC 6052): the IPv4 address is the last 32 bits. */
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');
/** The deprecated IPv4-compatible form (::a.b.c.d, RFC 4291): no router forwards it; the classifier calls it unicast. */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

type Address = ipaddr.IPv4 | ipaddr.IPv6;

const v4Of = (bytes: number[]): ipaddr.IPv4 => ipaddr.fromByteArray(bytes) as ipaddr.IPv4;

/**
 * The IPv4 address an IPv6 form carries and leaves to the IPv4 network (a translator, a relay or
 * the kernel's own mapping on the way delivers it there), or a reason to refuse the form outright:
 * - IPv4-mapped ::ffff:0:0/96 and IPv4-translated ::ffff:0:0:0/96 (SIIT): the last 32 bits;
 * - NAT64's well-known 64:ff9b::/96: the last 32 bits;
 * - 6to4 2002::/16: the 32 bits after the prefix;
 * - NAT64's local-use 64:ff9b:1::/48 is refused: where the IPv4 address sits depends on the prefix
 *   length the local network chose, which the service cannot know;
 * - Teredo 2001::/32 is refused (RANGE_WORDS): it tunnels to an obfuscated client address through
 *   a relay, never a webhook receiver's own address;
 * - the deprecated IPv4-compatible ::/96 is refused.
 */
function embedded(address: ipaddr.IPv6, range: string): { inner: ipaddr.IPv4 } | { refused: string } | undefined {
  const bytes = address.toByteArray();
  switch (range) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return { inner: v4Of(bytes.slice(12)) };
    case 'rfc6052':
      return address.match(NAT64_WELL_KNOWN)
        ? { inner: v4Of(bytes.slice(12)) }
        : { refused: 'a local-use NAT64 address (64:ff9b:1::/48)' };
    case '6to4':
      return { inner: v4Of(bytes.slice(2, 6)) };
    default:
      if (range === 'unicast' && address.match(IPV4_COMPATIBLE))
        return { refused: 'an IPv4-compatible address (::/96, deprecated)' };
      return undefined;
  }
}

function refusalOfParsed(address: Address): string | undefined {
  if (address.kind() === 'ipv4' && address.match(METADATA, 32)) return 'the cloud metadata address';
  const range: string = address.range();
  if (address.kind() === 'ipv6') {
    const form = embedded(address as ipaddr.IPv6, range);
    if (form && 'refused' in form) return form.refused;
    if (form) {
      const why = refusalOfParsed(form.inner);
      return why ? `${why} (${form.inner.toString()}, in an IPv6 form)` : undefined;
    }
  }
  if (range === 'unicast') return undefined;
  return RANGE_WORDS[range] ?? `a special-purpose address (${range})`;
}

/**
 * Why an address may not be reached (undefined: a public address). Classified by ipaddr.js: every
 * special-purpose range is refused, and an IPv6 form embedding an IPv4 address is judged by the
 * IPv4 address inside (or refused outright where its place cannot be known).
 */
export function refusalOf(address: string): string | undefined {
  const family = isIP(address);
  if (family === 0) return 'not an IP address';
  return refusalOfParsed(ipaddr.parse(family === 6 ? canonicalV6(address) : address));
}

/**
 * The IPv6 text as the URL standard writes it (a dotted tail as two hex groups, no zone), which
 * the classifier reads right: given `::a.b.c.d` as such, it reads it as IPv4-mapped instead of
 * the IPv4-compatible form it is.
 */
function canonicalV6(address: string): string {
  return new URL(`http://[${address.split('%')[0]}]/`).hostname.slice(1, -1);
}

export type Target = { ok: true; address: string; family: 4 | 6 } | { ok: false; reason: string };

/** Why a host's address is refused, naming the setting that would allow it. */
export function privateRefusal(host: string, address: string, why: string): string {
  const what = host === address ? `${address} is ${why}` : `${host} resolves to ${address}, ${why}`;
  return `${what}; private networks are not allowed (webhooks.allow_private_networks is off)`;
}

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
      if (why) return { ok: false, reason: `refused: ${privateRefusal(host, address, why)}` };
    }
  }
  const first = addresses[0]!;
  return { ok: true, address: first.address, family: first.family === 6 ? 6 : 4 };
}
