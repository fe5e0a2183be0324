import { defineSubgraph } from '../build-subgraph';
import { catalogDomain } from '../../src/domains/catalog';
import { aiDomain } from '../../src/domains/ai';
import { AiModulesResolver } from './ai.resolver';
import { documentsDomain } from '../../src/domains/documents';
import { DocumentsResolver } from './documents.resolver';
import { researchDomain } from '../../src/domains/research';
import { bulkDomain } from '../../src/domains/bulk';
import { JobsResolver } from './jobs.resolver';
import { canSeeCompany, type GraphQLContext } from '../context';
import { ModelResolver, ModulesCompany, ModulesCompanyResolver } from './modules.resolver';

export const modulesSubgraph = defineSubgraph({
  name: 'modules',
  domains: [catalogDomain, aiDomain, documentsDomain, researchDomain, bulkDomain],
  resolvers: [ModelResolver, ModulesCompanyResolver, AiModulesResolver, DocumentsResolver, JobsResolver],
  orphanedTypes: [ModulesCompany],
  references: {
    Company: (ref: { id: string }, ctx: GraphQLContext) => (canSeeCompany(ctx, ref.id) ? { id: ref.id } : null),
    Model: (ref: { id: string }, ctx: GraphQLContext) => ctx.container.get(ModelResolver).catalog.availableModel(ref.id),
  },
});
