import { defineSubgraph } from '../build-subgraph';
import { billingDomain } from '../../src/domains/billing';
import { identityDomain } from '../../src/domains/identity';
import { paymentsDomain } from '../../src/domains/payments';
import { canSeeCompany, type GraphQLContext } from '../context';
import { BillingCompany, BillingCompanyResolver, PlanResolver } from './billing.resolver';
import { CompanyCreditsResolver, CreditsResolver } from './credits.resolver';
import { CompanySubscriptionResolver, PaymentsResolver } from './payments.resolver';
import { UsageResolver } from './usage.resolver';
import { catalogDomain } from '../../src/domains/catalog';

export const billingSubgraph = defineSubgraph({
  name: 'billing',
  domains: [billingDomain, catalogDomain, identityDomain, paymentsDomain],
  resolvers: [BillingCompanyResolver, PlanResolver, CreditsResolver, CompanyCreditsResolver, PaymentsResolver, CompanySubscriptionResolver, UsageResolver],
  orphanedTypes: [BillingCompany],
  references: {
    Company: (ref: { id: string }, ctx: GraphQLContext) => (canSeeCompany(ctx, ref.id) ? { id: ref.id } : null),
  },
});
