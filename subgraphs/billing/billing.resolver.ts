import { Ctx, Directive, Field, FieldResolver, ID, Int, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { requireAuthenticated } from '../../src/auth/policy';
import { AppError } from '../../src/errors/catalog';
import type { GraphQLContext } from '../context';

@ObjectType('Plan', { description: 'A subscription plan' })
export class PlanType {
  @Field(() => ID)
  id!: string;

  @Field()
  name!: string;

  @Field(() => Int, { description: 'Credits allocated on the 1st of each month' })
  monthlyCredits!: number;
}

/** Billing's view of the identity-owned Company entity. */
@Directive('@key(fields: "id")')
@ObjectType('Company')
export class BillingCompany {
  @Field(() => ID)
  id!: string;
}

@Resolver(() => BillingCompany)
export class BillingCompanyResolver {
  @FieldResolver(() => PlanType, { description: "The company's current plan" })
  plan(@Root() company: { id: string }, @Ctx() ctx: GraphQLContext) {
    // A cached plan needs no batching: answer it without a loader round (the usual `me` case).
    const cached = ctx.services.plans.cachedPlanOf(company.id);
    if (cached !== undefined) return knownPlan(cached);
    return ctx.loaders.planByCompanyId.load(company.id).then(knownPlan);
  }
}

function knownPlan<T>(plan: T | null): T {
  if (!plan) throw new AppError('not_found', 'The company has no known plan');
  return plan;
}

@Resolver()
export class PlanResolver {
  @Query(() => [PlanType], { description: 'The plans on offer' })
  plans(@Ctx() ctx: GraphQLContext) {
    requireAuthenticated(ctx.principal);
    return ctx.services.plans.list();
  }
}
