import type { ApiOf, ConfigOf } from '../kernel/domain';
import type { Env } from '../env';
import type { ErrorEntry } from '../errors/catalog';
import { kernelErrors } from '../errors/catalog';
import { aiDomain } from './ai';
import { auditDomain } from './audit';
import { billingDomain } from './billing';
import { bulkDomain } from './bulk';
import { catalogDomain } from './catalog';
import { connectorsDomain } from './connectors';
import { documentsDomain } from './documents';
import { identityDomain } from './identity';
import { paymentsDomain } from './payments';
import { platformDomain } from './platform';
import { researchDomain } from './research';

/**
 * The one list of domains. Adding a domain is a folder under src/domains/
 * and one line here: its entities, migrations, error codes, events (by
 * declaration merging) and settings are assembled from this list, and boot
 * wires it after the domains it requires.
 */
export const domains = [auditDomain, platformDomain, billingDomain, catalogDomain, identityDomain, connectorsDomain, paymentsDomain, aiDomain, documentsDomain, researchDomain, bulkDomain] as const;

export type Domain = (typeof domains)[number];
export type DomainName = Domain['name'];

/** Every domain's public API, by domain name (what a fully booted process has). */
export type DomainApis = { [D in Domain as D['name']]: ApiOf<D> };

type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;

/** Every domain's settings, merged (each domain's loader returns its own top-level keys). */
export type DomainConfig = UnionToIntersection<ConfigOf<Domain>>;

/** Reads every domain's settings; two domains may not claim the same key. */
export function loadDomainConfig(env: Env): DomainConfig {
  const merged: Record<string, unknown> = {};
  for (const domain of domains) {
    const loaded = (domain as { config?: (env: Env) => object }).config?.(env) ?? {};
    for (const [key, value] of Object.entries(loaded)) {
      if (key in merged) throw new Error(`Setting "${key}" is claimed by two domains`);
      merged[key] = value;
    }
  }
  return merged as unknown as DomainConfig;
}

/** The whole error catalog, kernel codes first, then each domain's. */
export const errorCatalog: Readonly<Record<string, ErrorEntry>> = Object.freeze({
  ...kernelErrors,
  ...Object.assign({}, ...domains.map((domain) => domain.errors ?? {})),
});
