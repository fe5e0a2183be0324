import type { SubgraphDefinition } from '../build-subgraph';
import { AuditResolver, PlatformResolver } from './admin.resolver';
import { UserLockResolver } from './user-lock.resolver';
import { SecurityResolver } from './security.resolver';
import { AdminUsersResolver } from './admin-users.resolver';
import { CompanyAdminResolver } from './companies.resolver';
import { ModelAdminResolver } from './models.resolver';
import { ApiKeyAdminResolver } from './api-keys.resolver';
import { InvitationResolver } from './invitations.resolver';
import { ConnectorAdminResolver } from './connectors.resolver';

export const adminSubgraph: SubgraphDefinition = {
  name: 'admin',
  resolvers: [AuditResolver, PlatformResolver, UserLockResolver, SecurityResolver, AdminUsersResolver, CompanyAdminResolver, ModelAdminResolver, ApiKeyAdminResolver, InvitationResolver, ConnectorAdminResolver],
};
