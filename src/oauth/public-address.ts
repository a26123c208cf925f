import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/*
 * Client metadata documents are fetched from wherever a client_id points: the authorization server
 * must not be the way into our own network. oidc-provider already drops a connection to a special-use
 * address once made; this refuses before any connection is opened, so nothing on the inside hears
 * even a TLS greeting. The connect-time check stays, for a name that resolves differently the second time.
 */

const SPECIAL_USE = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // shared address space (carrier NAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata services
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // protocol assignments
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 3], // multicast and reserved, up to the broadcast address
] as const) {
  SPECIAL_USE.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 127], // unspecified and loopback
  ['64:ff9b::', 96], // NAT64: an IPv4 address in disguise
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  SPECIAL_USE.addSubnet(network, prefix, 'ipv6');
}

function isSpecialUse(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return SPECIAL_USE.check(mapped, 'ipv4');
  return SPECIAL_USE.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

/** Whether every address `hostname` resolves to is a public one (an unresolvable name is not). */
export async function resolvesOnlyToPublicAddresses(hostname: string): Promise<boolean> {
  const host = hostname.replace(/^\[(.*)\]$/, '$1');
  const addresses = isIP(host) ? [host] : await lookup(host, { all: true, verbatim: true }).then((found) => found.map((a) => a.address), () => []);
  return addresses.length > 0 && !addresses.some(isSpecialUse);
}
