import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/*
 * Client metadata documents are fetched from wherever a client_id points: the authorization server
 * must not be the way into our own network. oidc-provider already drops a connection to a special-use
 * address once made; this refuses before any connection is opened, so nothing on the inside hears
 * even a TLS greeting. The connect-time check stays, for a name that resolves differently the second time.
 */

/**
 * The IANA IPv4 special-purpose address registry (every entry, globally reachable or not: no client
 * document lives there), plus multicast and the reserved block.
 */
const SPECIAL_USE_IPV4: readonly (readonly [network: string, prefix: number])[] = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // shared address space (carrier NAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata services
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments (DS-Lite, NAT64 discovery, PCP and TURN anycast)
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.31.196.0', 24], // AS112
  ['192.52.193.0', 24], // AMT
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16], // private
  ['192.175.48.0', 24], // AS112 direct delegation
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the limited broadcast address
];

/**
 * The IANA IPv6 special-purpose address registry, the ranges that carry an IPv4 address (IPv4-mapped
 * is judged by the IPv4 address it carries, which is what a dual-stack socket reaches), and all that
 * is not global unicast (2000::/3).
 */
const SPECIAL_USE_IPV6: readonly (readonly [network: string, prefix: number])[] = [
  ['::', 96], // unspecified, loopback, and IPv4-compatible addresses (deprecated)
  ['::ffff:0:0:0', 96], // IPv4-translated addresses (SIIT)
  ['64:ff9b::', 96], // NAT64 (well-known prefix): an IPv4 address behind a translator
  ['64:ff9b:1::', 48], // NAT64, local use
  ['100::', 64], // discard-only
  ['100:0:0:1::', 64], // dummy prefix
  ['2001::', 23], // IETF protocol assignments: Teredo (2001::/32), benchmarking, AMT, AS112, ORCHID, DRIP
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4: an IPv4 address behind a relay
  ['2620:4f:8000::', 48], // AS112 direct delegation
  ['3fff::', 20], // documentation
  ['5f00::', 16], // segment routing SIDs
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
  // Outside global unicast: reserved or unassigned (IPv4-mapped ::ffff:0:0/96 is checked as IPv4 instead).
  ['::', 3],
  ['4000::', 2],
  ['8000::', 1],
];

/** A block list of `ranges`: one per family, since a BlockList also matches IPv4 addresses against IPv6 rules. */
function blockList(ranges: readonly (readonly [string, number])[], family: 'ipv4' | 'ipv6'): BlockList {
  const list = new BlockList();
  for (const [network, prefix] of ranges) list.addSubnet(network, prefix, family);
  return list;
}
const SPECIAL_V4 = blockList(SPECIAL_USE_IPV4, 'ipv4');
const SPECIAL_V6 = blockList(SPECIAL_USE_IPV6, 'ipv6');
const IPV4_MAPPED = blockList([['::ffff:0:0', 96]], 'ipv6');

/** Whether an IP address (v4, or v6 with or without a zone) is one no client document may live at. */
function isSpecialUseAddress(address: string): boolean {
  const host = address.replace(/%.*$/, '');
  const family = isIP(host);
  if (family === 4) return SPECIAL_V4.check(host, 'ipv4');
  if (family !== 6) return true;
  return IPV4_MAPPED.check(host, 'ipv6') ? SPECIAL_V4.check(mappedIpv4(host), 'ipv4') : SPECIAL_V6.check(host, 'ipv6');
}

/** The IPv4 address an IPv4-mapped one carries (its last 32 bits; the URL parser gives them as two hex groups). */
function mappedIpv4(address: string): string {
  const groups = new URL(`http://[${address}]`).hostname.slice(1, -1).split(':').slice(-2).map((group) => parseInt(group, 16));
  return groups.flatMap((group) => [group >> 8, group & 255]).join('.');
}

/** Whether every address `hostname` resolves to is a public one (an unresolvable name is not). */
export async function resolvesOnlyToPublicAddresses(hostname: string): Promise<boolean> {
  const host = hostname.replace(/^\[(.*)\]$/, '$1');
  const addresses = isIP(host) ? [host] : await lookup(host, { all: true, verbatim: true }).then((found) => found.map((a) => a.address), () => []);
  return addresses.length > 0 && !addresses.some(isSpecialUseAddress);
}
