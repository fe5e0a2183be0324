import type { SubgraphDefinition } from '../build-subgraph';
import { AuditResolver, PlatformResolver } from './admin.resolver';
import { UserLockResolver } from './user-lock.resolver';

export const adminSubgraph: SubgraphDefinition = {
  name: 'admin',
  resolvers: [AuditResolver, PlatformResolver, UserLockResolver],
};
