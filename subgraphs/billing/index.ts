import type { SubgraphDefinition } from '../build-subgraph';
import { canSeeCompany, type GraphQLContext } from '../context';
import { BillingCompany, BillingCompanyResolver, PlanResolver } from './billing.resolver';

export const billingSubgraph: SubgraphDefinition = {
  name: 'billing',
  resolvers: [BillingCompanyResolver, PlanResolver],
  orphanedTypes: [BillingCompany],
  references: {
    Company: (ref: { id: string }, ctx: GraphQLContext) => (canSeeCompany(ctx, ref.id) ? { id: ref.id } : null),
  },
};
