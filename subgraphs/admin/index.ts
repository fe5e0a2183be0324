import { defineSubgraph } from '../build-subgraph';
import { auditDomain } from '../../src/domains/audit';
import { catalogDomain } from '../../src/domains/catalog';
import { connectorsDomain } from '../../src/domains/connectors';
import { identityDomain } from '../../src/domains/identity';
import { platformDomain } from '../../src/domains/platform';
import { AuditResolver, PlatformResolver } from './admin.resolver';
import { UserLockResolver } from './user-lock.resolver';
import { SecurityResolver } from './security.resolver';
import { AdminUsersResolver } from './admin-users.resolver';
import { CompanyAdminResolver } from './companies.resolver';
import { ModelAdminResolver } from './models.resolver';
import { ApiKeyAdminResolver } from './api-keys.resolver';
import { InvitationResolver } from './invitations.resolver';
import { ConnectorAdminResolver } from './connectors.resolver';

export const adminSubgraph = defineSubgraph({
  name: 'admin',
  domains: [auditDomain, platformDomain, identityDomain, catalogDomain, connectorsDomain],
  resolvers: [AuditResolver, PlatformResolver, UserLockResolver, SecurityResolver, AdminUsersResolver, CompanyAdminResolver, ModelAdminResolver, ApiKeyAdminResolver, InvitationResolver, ConnectorAdminResolver],
});
