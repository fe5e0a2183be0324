import { defineSubgraph } from '../build-subgraph';
import { billingDomain } from '../../src/domains/billing';
import { identityDomain } from '../../src/domains/identity';
import { canSeeCompany, type GraphQLContext } from '../context';
import { BillingCompany, BillingCompanyResolver, PlanResolver } from './billing.resolver';
import { CompanyCreditsResolver, CreditsResolver } from './credits.resolver';

export const billingSubgraph = defineSubgraph({
  name: 'billing',
  domains: [billingDomain, identityDomain],
  resolvers: [BillingCompanyResolver, PlanResolver, CreditsResolver, CompanyCreditsResolver],
  orphanedTypes: [BillingCompany],
  references: {
    Company: (ref: { id: string }, ctx: GraphQLContext) => (canSeeCompany(ctx, ref.id) ? { id: ref.id } : null),
  },
});
