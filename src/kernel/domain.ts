import type { MigrationEntry } from '../db/migrations';
import type { Env } from '../env';
import type { ErrorEntry } from '../errors/catalog';
import type { JobHandler, JobSchedule } from '../jobs/worker';
import type { Kernel } from './kernel';
import type { KernelConfig } from './config';

/** An entity class MikroORM maps. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export type EntityClass = Function;

/**
 * The module contract. Each domain under src/domains/<name>/ exports one
 * descriptor from its index.ts; src/domains/index.ts lists them, and the
 * entity list, the migrations, the error catalog, the event map and the
 * config loaders are assembled from that list.
 *
 * `requires` names the domains whose public API this one uses, by their
 * descriptors: `create` receives exactly those APIs, typed. The graph has no
 * cycles (boot refuses one), so nothing is wired lazily.
 */
export interface DomainModule<Name extends string = string, Api = unknown, Deps extends DomainDeps = DomainDeps, Config = unknown> {
  readonly name: Name;
  readonly requires: Deps;
  /** The entities this domain owns (its tables). */
  readonly entities: readonly EntityClass[];
  /** Its migrations, applied in name order together with every other domain's. */
  readonly migrations: readonly MigrationEntry[];
  /** Its error codes (defined with `defineErrors` in its errors.ts). */
  readonly errors?: Readonly<Record<string, ErrorEntry>>;
  /** Reads its settings from the environment (never process.env itself). */
  readonly config?: (env: Env) => Config;
  /** Builds its services from the kernel, its settings and the APIs it requires. */
  readonly create: (input: DomainInput<Deps, Config>) => Api;
  /** Seed data and bootstrap, in one unit of work on every start (idempotent). */
  readonly seed?: (api: Api) => Promise<void>;
  /**
   * Its job handlers by kind (`<domain>.<name>`), run by the worker of a
   * serving process. Jobs are enqueued with `kernel.jobs.enqueue`.
   */
  readonly jobs?: (api: Api) => Readonly<Record<string, JobHandler>>;
  /** Its recurring jobs (each kind needs a handler in `jobs`): one pending job per kind, the first due one interval after start. */
  readonly schedules?: (api: Api) => readonly JobSchedule[];
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyDomain = DomainModule<string, any, any, any>;
export type DomainDeps = Record<string, AnyDomain>;

export interface DomainInput<Deps extends DomainDeps, Config> {
  kernel: Kernel;
  config: KernelConfig & Config;
  deps: ApisOf<Deps>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ApiOf<M> = M extends DomainModule<any, infer A, any, any> ? A : never;
export type ApisOf<D extends DomainDeps> = { [K in keyof D]: ApiOf<D[K]> };
/** A domain's own settings; a domain without any contributes none. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ConfigOf<M> = M extends DomainModule<any, any, any, infer C> ? (unknown extends C ? Record<never, never> : C) : never;

/** The APIs of a list of domains, by name: what a subgraph's resolvers may use. */
export type ApisOfList<L extends readonly AnyDomain[]> = { [M in L[number] as M['name']]: ApiOf<M> };

/** Identity function that infers the descriptor's types. */
export function defineDomain<Name extends string, Api, Deps extends DomainDeps = Record<never, never>, Config = unknown>(
  module: DomainModule<Name, Api, Deps, Config>,
): DomainModule<Name, Api, Deps, Config> {
  return module;
}

/**
 * The domains to boot for `wanted`: each with everything it requires, in an
 * order where a domain comes after its requirements. Throws on a cycle or
 * on a `requires` key that is not the required domain's name.
 */
export function bootOrder(wanted: readonly AnyDomain[]): AnyDomain[] {
  const ordered: AnyDomain[] = [];
  const state = new Map<AnyDomain, 'visiting' | 'done'>();
  const visit = (domain: AnyDomain, path: string[]) => {
    const seen = state.get(domain);
    if (seen === 'done') return;
    if (seen === 'visiting') throw new Error(`Domain dependency cycle: ${[...path, domain.name].join(' -> ')}`);
    state.set(domain, 'visiting');
    for (const [key, dep] of Object.entries(domain.requires as DomainDeps)) {
      if (key !== dep.name) throw new Error(`Domain ${domain.name} requires "${dep.name}" under the key "${key}"`);
      visit(dep, [...path, domain.name]);
    }
    state.set(domain, 'done');
    ordered.push(domain);
  };
  for (const domain of wanted) visit(domain, []);
  return ordered;
}
