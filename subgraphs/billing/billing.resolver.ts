import { Ctx, Directive, Field, FieldResolver, ID, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { PlanType } from './plan.types';
import { Rest } from '../rest';
import { Access } from '../policy/access';
import { requireAuthenticated } from '../../src/auth/policy';
import { AppError } from '../../src/errors/catalog';
import type { BillingApi, PlanService } from '../../src/domains/billing';
import type { IdentityApi, IdentityService } from '../../src/domains/identity';
import type { GraphQLContext } from '../context';

/** Billing's view of the identity-owned Company entity. */
@Directive('@key(fields: "id")')
@ObjectType('Company')
export class BillingCompany {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;
}

@Resolver(() => BillingCompany)
export class BillingCompanyResolver {
  static from = ({ billing, identity }: { billing: BillingApi; identity: IdentityApi }) =>
    new BillingCompanyResolver(billing.plans, identity.accounts);

  private readonly plansByIds = (ids: readonly string[]) => this.plans.plansByIds(ids);

  constructor(
    private readonly plans: PlanService,
    private readonly accounts: IdentityService,
  ) {}

  /**
   * Synchronous when the plan is in memory (the profile's hot path: no
   * promise, no loader round); otherwise through the request's loader, so a
   * plan selected many times is read once per request. The company object
   * carries its plan id in one process; behind a gateway the reference
   * carries only the id.
   */
  @FieldResolver(() => PlanType, { description: "The company's current plan" })
  plan(@Root() company: { id: string; planId?: string }, @Ctx() ctx: GraphQLContext) {
    const planId = company.planId ?? this.accounts.planIdOf(company.id);
    if (planId === null) return knownPlan(null);
    const cached = this.plans.cachedPlan(planId);
    if (cached !== undefined) return knownPlan(cached);
    return ctx.loaders.of(this.plansByIds).load(planId).then(knownPlan);
  }
}

function knownPlan<T>(plan: T | null): T {
  if (!plan) throw new AppError('not_found', 'The company has no known plan');
  return plan;
}

@Resolver()
export class PlanResolver {
  static from = ({ billing }: { billing: BillingApi }) => new PlanResolver(billing.plans);

  constructor(private readonly catalog: PlanService) {}

  @Access({ auth: 'authenticated' })
  @Query(() => [PlanType], { description: 'The plans on offer' })
  plans(@Ctx() ctx: GraphQLContext) {
    requireAuthenticated(ctx.principal);
    return this.catalog.list();
  }
}
