import { test } from 'node:test';
import assert from 'node:assert/strict';
import { documentedPaths, type DocumentedPath } from '../rest-compat/documented-paths';
import { API_PREFIXES, type RestRoute } from '../rest-compat/route';
import { routeTable } from '../rest-compat/routes';
import { build } from './helper';

/** fastify's /a/:id to the spec's /a/{id}. */
const toSpecPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');
const key = (p: { method: string; path: string }) => `${p.method} ${p.path}`;

/**
 * Whether `route` serves the documented path: the same template (parameter
 * names included), or a route parameter standing for a literal segment the
 * spec spells out (GET /auth/:provider/start serves /auth/google/start).
 */
function serves(route: RestRoute, documented: DocumentedPath): boolean {
  if (route.method !== documented.method) return false;
  const routeSegments = toSpecPath(route.path).split('/');
  const docSegments = documented.path.split('/');
  if (routeSegments.length !== docSegments.length) return false;
  return routeSegments.every((segment, i) => {
    const doc = docSegments[i];
    if (segment === doc) return true;
    return /^\{\w+\}$/.test(segment) && !/[{}]/.test(doc);
  });
}

test('the documented path list is well formed', () => {
  const seen = new Set<string>();
  for (const p of documentedPaths) {
    assert.match(p.path, /^\/[a-z0-9/_{}-]*$/, `${key(p)}: unexpected characters`);
    assert.ok(!seen.has(key(p)), `${key(p)} is listed twice`);
    seen.add(key(p));
  }
  // 74 in platform-api.md ({provider} counted once per provider), 12 in ai-modules-api.md.
  assert.equal(documentedPaths.filter((p) => p.spec === 'platform').length, 74);
  assert.equal(documentedPaths.filter((p) => p.spec === 'ai-modules').length, 12);
});

test('every documented path the route table claims is served under /v1 and /api/v1', async (t) => {
  const app = await build(t);
  await app.ready();

  const served: DocumentedPath[] = [];
  const unserved = new Map<string, number>();
  for (const documented of documentedPaths) {
    const route = routeTable.find((r) => serves(r, documented));
    if (!route) {
      const section = `${documented.spec}: ${documented.section}`;
      unserved.set(section, (unserved.get(section) ?? 0) + 1);
      continue;
    }
    for (const prefix of API_PREFIXES) {
      assert.ok(
        app.hasRoute({ method: route.method, url: prefix + route.path }),
        `${documented.method} ${prefix}${documented.path} is in the route table but not registered`,
      );
    }
    served.push(documented);
  }

  t.diagnostic(`served ${served.length} of ${documentedPaths.length} documented paths`);
  for (const [section, count] of unserved) t.diagnostic(`unserved in ${section}: ${count}`);
});

test('every route in the route table is a documented path, or marked as an Atrium extension', (t) => {
  const seen = new Set<string>();
  const extensions: string[] = [];
  for (const route of routeTable) {
    const routeKey = key(route);
    assert.ok(!seen.has(routeKey), `${routeKey} is in the route table twice`);
    seen.add(routeKey);
    const documented = documentedPaths.some((d) => serves(route, d));
    if (route.extension) {
      // A path the spec does not show is ours to design; it must not shadow a documented one.
      assert.ok(!documented, `${routeKey} is documented in the spec; drop its extension marker`);
      extensions.push(routeKey);
      continue;
    }
    assert.ok(
      documented,
      `${route.method} ${toSpecPath(route.path)} is not a documented path (path parameters must be named as in the spec); ` +
        'mark a path of our own design with extension: true',
    );
  }
  t.diagnostic(`${extensions.length} Atrium extension paths: ${extensions.join(', ') || 'none'}`);
});
