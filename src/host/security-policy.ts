import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { Kind, parse, type DocumentNode, type SelectionSetNode } from 'graphql';
import { enrollmentRequired } from '../domains/identity';

/**
 * REST routes a user who must still enrol in MFA (company policy mfa_required,
 * MFA off) may call: enrolment itself, their profile, and sign-out.
 */
const ENROLMENT_ROUTES = new Set(['POST /me/mfa/setup', 'POST /me/mfa/verify', 'GET /me/profile', 'PATCH /me/profile', 'POST /auth/logout']);
/** The same, as GraphQL root fields. */
export const ENROLMENT_FIELDS = new Set(['me', 'setupMfa', 'verifyMfa', 'updateMyProfile', 'logout', '__typename']);

/** Root fields of every operation in the document (fragments followed); null when it does not parse. */
export function rootFields(document: DocumentNode): Set<string> {
  const fragments = new Map<string, SelectionSetNode>();
  for (const def of document.definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def.selectionSet);
  }
  const fields = new Set<string>();
  const seen = new Set<string>();
  const walk = (set: SelectionSetNode) => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) fields.add(selection.name.value);
      else if (selection.kind === Kind.INLINE_FRAGMENT) walk(selection.selectionSet);
      else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        const fragment = fragments.get(selection.name.value);
        if (fragment) walk(fragment);
      }
    }
  };
  for (const def of document.definitions) if (def.kind === Kind.OPERATION_DEFINITION) walk(def.selectionSet);
  return fields;
}

/** Whether every GraphQL operation of the request only touches enrolment fields. */
function graphqlEnrolmentOnly(request: FastifyRequest): boolean {
  const source = request.method === 'GET' ? (request.query as Record<string, unknown>) : request.body;
  const operations = Array.isArray(source) ? source : [source];
  if (!operations.length) return false;
  return operations.every((operation) => {
    const query = (operation as { query?: unknown } | null)?.query;
    if (typeof query !== 'string') return false;
    try {
      const fields = rootFields(parse(query));
      return fields.size > 0 && [...fields].every((field) => ENROLMENT_FIELDS.has(field));
    } catch {
      return false;
    }
  });
}

function restRouteKey(request: FastifyRequest): string | null {
  const url = request.routeOptions.url;
  if (!url) return null;
  const path = url.replace(/^\/(?:api\/)?v1(?=\/)/, '');
  return path === url ? null : `${request.method} ${path}`;
}

/**
 * Enforces MFA enrolment (company policy mfa_required) on HTTP requests,
 * before the handler, once the body is parsed: a GraphQL request is judged by
 * its root fields. The IP allow-list is applied where the principal is
 * resolved (principal.ts), as soon as the credential is known.
 */
export const securityPolicyPlugin = fp(
  async (app) => {
    const restrict = (request: FastifyRequest) => {
      const key = restRouteKey(request);
      const allowed = key !== null ? ENROLMENT_ROUTES.has(key) : request.routeOptions.url === '/graphql' && graphqlEnrolmentOnly(request);
      if (!allowed) request.principal = { kind: 'anonymous', credentialError: enrollmentRequired() };
    };
    const access = app.domains.identity.access;
    // Callback-style with a synchronous fast path: this runs on every request.
    app.addHook('preHandler', (request, _reply, done) => {
      const pending = access.enrollmentPending(request.principal);
      if (typeof pending === 'boolean') {
        if (pending) restrict(request);
        return done();
      }
      pending.then((owed) => {
        if (owed) restrict(request);
        done();
      }, done);
    });
  },
  { name: 'atrium-security-policy', dependencies: ['atrium-principal'] },
);
