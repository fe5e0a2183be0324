import fs from 'node:fs';
import path from 'node:path';
import type { RestRoute } from '../route';

/** A route file: `<topic>.routes.ts`, exporting its routes as one or more `…Routes` arrays. */
const ROUTE_FILE = /^[a-z0-9-]+\.routes\.(js|ts)$/;
const ROUTES_EXPORT = /Routes$/;

/**
 * Every route file of this folder, in file-name order, so a domain adds its
 * REST paths with a file here and no line in a central list.
 */
function discoverRoutes(): RestRoute[] {
  const files = fs.readdirSync(__dirname).filter((file) => ROUTE_FILE.test(file)).sort();
  return files.flatMap((file) => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const module = require(path.join(__dirname, file)) as Record<string, unknown>;
    const exported = Object.entries(module).filter(([name, value]) => ROUTES_EXPORT.test(name) && Array.isArray(value));
    if (!exported.length) throw new Error(`rest-compat/routes/${file} exports no …Routes array`);
    return exported.flatMap(([, value]) => value as RestRoute[]);
  });
}

/** The route table: every REST path Atrium serves, under both prefixes. */
export const routeTable: RestRoute[] = discoverRoutes();
