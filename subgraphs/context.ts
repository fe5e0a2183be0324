import DataLoader from 'dataloader';
import type { Principal, RequestMeta } from '../src/auth/principal';
import type { ScheduledRun } from './policy/scheduler';

/** What a transport can do for a resolver beyond returning data. */
export interface TransportHooks {
  clearCookie(name: string): void;
}

/**
 * Batch loaders of one request, created on first use and keyed by their
 * batch function, so cheap requests pay nothing and a resolver brings its own
 * batch (`ctx.loaders.of(this.companiesByIds).load(id)`). An HTTP request's
 * loaders also remember what they loaded for the request's life. A WebSocket
 * connection lives long and runs many operations, so its loaders only batch
 * (`remember: false`): a remembered row would go stale between operations.
 */
/**
 * The most keys one batch reads: a larger batch (a gateway's `_entities`
 * with thousands of representations) is read in several statements, each
 * well within SQLite's limit on bound variables.
 */
export const MAX_BATCH = 500;

export class Loaders {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  private readonly loaders = new Map<DataLoader.BatchLoadFn<any, any>, DataLoader<any, any>>();

  constructor(private readonly options: { remember: boolean } = { remember: true }) {}

  /** The request's loader for this batch function (pass a stable, bound function). */
  of<K, V>(batch: DataLoader.BatchLoadFn<K, V>): DataLoader<K, V> {
    let loader = this.loaders.get(batch) as DataLoader<K, V> | undefined;
    if (!loader) {
      loader = new DataLoader(batch, { cache: this.options.remember, maxBatchSize: MAX_BATCH });
      this.loaders.set(batch, loader);
    }
    return loader;
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Constructor = abstract new (...args: any[]) => object;

/**
 * The resolver instances of one running app, each built from the domain
 * APIs it declares (its static `from`). type-graphql asks the context's
 * container for the instance of a resolver class on every call.
 */
export class ResolverContainer {
  private readonly instances = new Map<Constructor, object>();

  constructor(instances: Iterable<object>) {
    for (const instance of instances) this.instances.set(instance.constructor as Constructor, instance);
  }

  get<T extends object>(cls: abstract new (...args: never[]) => T): T {
    const instance = this.instances.get(cls as unknown as Constructor);
    if (!instance) throw new Error(`No resolver ${cls.name} in this app: its subgraph is not served here`);
    return instance as T;
  }
}

/** The context every resolver receives, over HTTP, WebSocket, the REST adapter or a standalone subgraph. */
export interface GraphQLContext {
  principal: Principal;
  meta: RequestMeta;
  loaders: Loaders;
  container: ResolverContainer;
  transport?: TransportHooks;
  /** Set on operations that arrive over a graphql-ws socket, which are admitted by their first root field. */
  viaSocket?: boolean;
  /** A heavier operation's turn (policy/scheduler.ts): its root fields run one after another. */
  run?: ScheduledRun;
}

export function createContext(
  container: ResolverContainer,
  principal: Principal,
  meta: RequestMeta,
  transport?: TransportHooks,
  run?: ScheduledRun,
): GraphQLContext {
  return { principal, meta, loaders: new Loaders(), container, transport, run };
}

/**
 * Whether the caller may see records of this company: its own members and
 * keys, or a platform superadmin. Everything else answers as if absent.
 */
export function canSeeCompany(ctx: GraphQLContext, companyId: string): boolean {
  const p = ctx.principal;
  if (p.kind === 'anonymous') return false;
  return p.companyId === companyId || (p.kind === 'user' && p.isSuperadmin);
}
