import { BlockList, isIPv4, isIPv6 } from 'node:net';

/** A parsed CIDR (a bare address is a /32 or /128), or null when it is not one. */
export function parseCidr(value: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | null {
  const [address, prefixText, ...rest] = value.trim().split('/');
  if (rest.length || !address) return null;
  const family = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : null;
  if (!family) return null;
  const max = family === 'ipv4' ? 32 : 128;
  if (prefixText === undefined) return { address, prefix: max, family };
  if (!/^\d{1,3}$/.test(prefixText)) return null;
  const prefix = Number(prefixText);
  return prefix <= max ? { address, prefix, family } : null;
}

/** An IPv4-mapped IPv6 address (::ffff:10.1.2.3) is checked as the IPv4 address. */
function normalizeIp(ip: string): { address: string; family: 'ipv4' | 'ipv6' } | null {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const address = mapped ? mapped[1]! : ip;
  if (isIPv4(address)) return { address, family: 'ipv4' };
  if (isIPv6(address)) return { address, family: 'ipv6' };
  return null;
}

/** Addresses and CIDRs as one list (entries that are neither are skipped: callers validate first); null for none. */
export function compileAllowlist(cidrs: readonly string[]): BlockList | null {
  if (!cidrs.length) return null;
  const list = new BlockList();
  for (const cidr of cidrs) {
    const parsed = parseCidr(cidr);
    if (parsed) list.addSubnet(parsed.address, parsed.prefix, parsed.family);
  }
  return list;
}

/** Whether `ip` is in the list (an IPv4-mapped address as its IPv4 one); every address when there is no list. */
export function ipAllowed(allowlist: BlockList | null, ip: string): boolean {
  if (!allowlist) return true;
  const normalized = normalizeIp(ip);
  return normalized !== null && allowlist.check(normalized.address, normalized.family);
}
