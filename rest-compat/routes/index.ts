import type { RestRoute } from '../route';
import { authRoutes } from './auth.routes';
import { platformRoutes } from './platform.routes';

/** The route table: every REST path Atrium serves, under both prefixes. */
export const routeTable: RestRoute[] = [...platformRoutes, ...authRoutes];
