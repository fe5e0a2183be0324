import { compileAllowlist, ipAllowed } from '../net/address-list';
import type { TrustProxy } from './config';

/** Whether the address `hop` steps from the socket is a proxy of the operator's, so the entry it appended is believed. */
export type ProxyTrust = (address: string, hop: number) => boolean;

/**
 * The setting as fastify's `trustProxy` function (the one form its types
 * take for a hop count) and as `clientAddress` reads it; false for none.
 */
export function proxyTrust(setting: TrustProxy): ProxyTrust | false {
  if (setting === false) return false;
  if (typeof setting === 'number') return (_address, hop) => hop < setting;
  const proxies = compileAllowlist(setting);
  return (address) => ipAllowed(proxies, address);
}

/**
 * The client's address as fastify derives it (proxy-addr's walk): from the
 * socket's peer back through X-Forwarded-For, right to left, for as long as
 * the address reached is a trusted proxy. For requests fastify never builds
 * an `ip` for (a framework error's).
 */
export function clientAddress(socketAddress: string, forwarded: string | string[] | undefined, trust: ProxyTrust | false): string {
  if (!trust) return socketAddress;
  const header = Array.isArray(forwarded) ? forwarded.join(',') : (forwarded ?? '');
  const chain = [socketAddress, ...header.split(',').map((entry) => entry.trim()).filter(Boolean).reverse()];
  for (let hop = 0; hop < chain.length - 1; hop++) if (!trust(chain[hop]!, hop)) return chain[hop]!;
  return chain[chain.length - 1]!;
}
