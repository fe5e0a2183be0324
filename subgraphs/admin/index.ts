import type { SubgraphDefinition } from '../build-subgraph';
import { AuditResolver, PlatformResolver } from './admin.resolver';

export const adminSubgraph: SubgraphDefinition = {
  name: 'admin',
  resolvers: [AuditResolver, PlatformResolver],
};
