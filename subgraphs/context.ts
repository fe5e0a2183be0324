import DataLoader from 'dataloader';
import type { Services } from '../src/services';
import type { Principal, RequestMeta } from '../src/auth/principal';
import type { Company } from '../src/domains/identity/company.entity';
import type { Plan } from '../src/domains/billing/plan.entity';
import type { User } from '../src/domains/identity/user.entity';

/** What a transport can do for a resolver beyond returning data. */
export interface TransportHooks {
  clearCookie(name: string): void;
}

/**
 * Batch loaders, created on first use so cheap requests pay nothing. An HTTP
 * request gets its own, which also remember what they loaded for the
 * request's life. A WebSocket connection lives long and runs many operations,
 * so its loaders only batch (`remember: false`): a remembered row would go
 * stale between operations.
 */
export class Loaders {
  private companies?: DataLoader<string, Company | null>;
  private plans?: DataLoader<string, Plan | null>;
  private users?: DataLoader<string, User | null>;

  constructor(
    private readonly services: Services,
    private readonly options: { remember: boolean } = { remember: true },
  ) {}

  /** A DataLoader under this set's caching rule, for resolvers with a batch of their own. */
  create<K, V>(batch: DataLoader.BatchLoadFn<K, V>): DataLoader<K, V> {
    return new DataLoader(batch, { cache: this.options.remember });
  }

  get companyById(): DataLoader<string, Company | null> {
    return (this.companies ??= this.create((ids) => this.services.identity.companiesByIds(ids)));
  }

  get userById(): DataLoader<string, User | null> {
    return (this.users ??= this.create((ids) => this.services.identity.usersByIds(ids)));
  }

  get planByCompanyId(): DataLoader<string, Plan | null> {
    return (this.plans ??= this.create((ids) => this.services.plans.plansForCompanies(ids)));
  }
}

/** The context every resolver receives, over HTTP, WebSocket or the REST adapter. */
export interface GraphQLContext {
  services: Services;
  principal: Principal;
  meta: RequestMeta;
  loaders: Loaders;
  transport?: TransportHooks;
}

export function createContext(
  services: Services,
  principal: Principal,
  meta: RequestMeta,
  transport?: TransportHooks,
): GraphQLContext {
  return { services, principal, meta, loaders: new Loaders(services), transport };
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
