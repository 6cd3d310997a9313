/**
 * Whether an IP address is public unicast: the only kind the door fetches a client's metadata
 * document from, so a client id cannot make the server reach its own network (SSRF). Refused:
 * loopback, private, shared (CGNAT), link-local (cloud metadata services), documentation,
 * benchmarking, multicast and reserved ranges, and every IPv6 address outside global unicast or
 * inside its special-purpose blocks (IPv4-mapped, NAT64, 6to4, Teredo, unique local).
 *
 * @see RFC 6890 (special-purpose address registries)
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';

const NOT_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv4');
}

/** IPv6 global unicast is 2000::/3; inside it, these blocks are not plain public hosts. */
const GLOBAL_UNICAST = new BlockList();
GLOBAL_UNICAST.addSubnet('2000::', 3, 'ipv6');
for (const [network, prefix] of [
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['3fff::', 20],
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

export function isPublicAddress(address: string): boolean {
  if (isIPv4(address)) return !NOT_PUBLIC.check(address, 'ipv4');
  if (isIPv6(address)) return GLOBAL_UNICAST.check(address, 'ipv6') && !NOT_PUBLIC.check(address, 'ipv6');
  return false;
}
