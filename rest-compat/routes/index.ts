import type { RestRoute } from '../route';
import { accountRoutes } from './account.routes';
import { adminUserRoutes } from './admin-users.routes';
import { adminCompanyRoutes } from './admin-companies.routes';
import { adminModelRoutes } from './admin-models.routes';
import { adminApiKeyRoutes } from './admin-api-keys.routes';
import { invitationRoutes } from './invitations.routes';
import { authRoutes } from './auth.routes';
import { meRoutes } from './me.routes';
import { mfaRoutes } from './mfa.routes';
import { passwordRoutes } from './password.routes';
import { platformRoutes } from './platform.routes';
import { ssoRoutes } from './sso.routes';
import { adminSecurityRoutes } from './admin-security.routes';
import { adminConnectorRoutes } from './admin-connectors.routes';

/** The route table: every REST path Atrium serves, under both prefixes. */
export const routeTable: RestRoute[] = [...platformRoutes, ...authRoutes, ...meRoutes, ...mfaRoutes, ...ssoRoutes, ...accountRoutes, ...passwordRoutes, ...adminUserRoutes, ...adminCompanyRoutes, ...adminModelRoutes, ...adminApiKeyRoutes, ...invitationRoutes, ...adminSecurityRoutes, ...adminConnectorRoutes];
