import type { RestRoute } from '../route';
import { accountRoutes } from './account.routes';
import { adminUserRoutes } from './admin-users.routes';
import { authRoutes } from './auth.routes';
import { meRoutes } from './me.routes';
import { mfaRoutes } from './mfa.routes';
import { passwordRoutes } from './password.routes';
import { platformRoutes } from './platform.routes';
import { ssoRoutes } from './sso.routes';

/** The route table: every REST path Atrium serves, under both prefixes. */
export const routeTable: RestRoute[] = [...platformRoutes, ...authRoutes, ...meRoutes, ...mfaRoutes, ...ssoRoutes, ...accountRoutes, ...passwordRoutes, ...adminUserRoutes];
