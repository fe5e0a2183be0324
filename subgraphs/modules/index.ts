import type { SubgraphDefinition } from '../build-subgraph';
import { canSeeCompany, type GraphQLContext } from '../context';
import { ModelResolver, ModulesCompany, ModulesCompanyResolver } from './modules.resolver';

export const modulesSubgraph: SubgraphDefinition = {
  name: 'modules',
  resolvers: [ModelResolver, ModulesCompanyResolver],
  orphanedTypes: [ModulesCompany],
  references: {
    Company: (ref: { id: string }, ctx: GraphQLContext) => (canSeeCompany(ctx, ref.id) ? { id: ref.id } : null),
    Model: (ref: { id: string }, ctx: GraphQLContext) => ctx.services.catalog.availableModel(ref.id),
  },
};
