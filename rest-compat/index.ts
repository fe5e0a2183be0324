import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parse, type ExecutionResult } from 'graphql';
import type { Principal } from '../src/auth/principal';
import type { OperationPolicies } from '../subgraphs/policy/gate';
import { createContext } from '../subgraphs/context';
import { fromGraphQLError, toGraphQLError } from '../subgraphs/errors';
import { replyTransport } from '../src/host/graphql';
import { compileOperation } from './compiled-operation';
import { API_PREFIXES, type RestRoute } from './route';
import type { Deprecation } from '../src/host/types';
import { routeTable } from './routes';
import { pageLinks, type PageBody } from './pagination';

/** RFC 9745 Deprecation, RFC 8594 Sunset and the successor's Link, on a deprecated route only. */
function deprecationHeaders(deprecation: Deprecation) {
  return async (_request: FastifyRequest, reply: FastifyReply) => {
    reply.header('deprecation', deprecation.deprecation);
    reply.header('sunset', deprecation.sunset);
    reply.header('link', `<${deprecation.link}>; rel="successor-version"`);
  };
}

function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as Promise<T> | null)?.then === 'function';
}

/**
 * Registers every route of the table under /v1 and /api/v1. A route runs its
 * GraphQL operation in-process on the served schema (compiled once), so REST
 * and GraphQL share resolvers, rules and errors.
 */
export const restCompatPlugin = fp<{ routes?: RestRoute[] }>(
  async (app, options) => {
    const secureCookies = app.config.publicUrl.startsWith('https://');

    // The routes live in their own scope that parses JSON bodies only: fastify's
    // built-in text/plain parser would turn a text body into a 422 instead of a 415.
    await app.register(async (scope) => {
      scope.removeContentTypeParser('text/plain');
      for (const route of options.routes ?? routeTable) {
        registerRoute(scope, route);
      }
    });

    function registerRoute(scope: FastifyInstance, route: RestRoute) {
      const handler = route.raw ?? graphqlHandler(route);
      const policies = routePolicies(route);
      const [policy] = policies;
      for (const prefix of API_PREFIXES) {
        scope.route({
          method: route.method,
          url: prefix + route.path,
          schema: {
            ...route.request,
            ...(route.response ? { response: { [route.status]: route.response } } : {}),
          },
          // The credential requirement and the budget are the policy of the field the route runs.
          config: { auth: policy!.auth === 'public' ? 'public' : 'required', rateLimit: policy!.rateLimit ?? 'default', deprecation: route.deprecation },
          preHandler: admitted(policies),
          ...(route.deprecation ? { onSend: deprecationHeaders(route.deprecation) } : {}),
          handler,
        });
      }
    }

    /**
     * A GraphQL route's policy is its field's (the table may repeat it for the
     * OpenAPI document, and a disagreement stops the server); a raw route,
     * which runs no field, declares its own.
     */
    function routePolicies(route: RestRoute): OperationPolicies {
      const declared = { auth: route.auth === 'public' ? 'public' : 'authenticated', rateLimit: route.rateLimit ?? 'default' } as const;
      if (!route.graphql) return [{ auth: declared.auth, ...(declared.rateLimit === 'default' ? {} : { rateLimit: declared.rateLimit }) }];
      const policies = app.gate.policiesOf(parse(route.graphql.document));
      if (policies.length !== 1) throw new Error(`Route ${route.method} ${route.path} must run exactly one root field`);
      const field = policies[0]!;
      if (field.auth !== declared.auth || (field.rateLimit ?? 'default') !== declared.rateLimit) {
        throw new Error(`Route ${route.method} ${route.path} declares ${JSON.stringify(declared)}, its field ${JSON.stringify(field)}`);
      }
      return policies;
    }

    /** The policy layer's verdict before the handler: a caller owing MFA enrolment runs as anonymous unless the field allows it. */
    function admitted(policies: OperationPolicies) {
      return (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
        let principal: Principal | Promise<Principal>;
        try {
          principal = app.gate.admit(policies, request.principal, request.ip, { spend: false, enrollment: true });
        } catch (error) {
          return done(error as Error);
        }
        if (!isPromise(principal)) {
          request.principal = principal;
          return done();
        }
        principal.then((admittedPrincipal) => {
          request.principal = admittedPrincipal;
          done();
        }, done);
      };
    }

    function graphqlHandler(route: RestRoute) {
      const mapping = route.graphql;
      if (!mapping) throw new Error(`Route ${route.method} ${route.path} has neither graphql nor raw`);
      const operation = compileOperation(app.graphql.schema, mapping.document, `${route.method} ${route.path}`);
      const finish = (request: FastifyRequest, reply: FastifyReply, result: ExecutionResult) => {
        // A resolver's error keeps its catalog code; anything unknown is logged and masked, as over GraphQL.
        if (result.errors?.length) throw fromGraphQLError(toGraphQLError(result.errors[0]!, request.log));
        reply.code(route.status);
        const body = mapping.result(result.data as Record<string, unknown>);
        if (route.paginated) reply.header('link', pageLinks(app.config.publicUrl, request.url, body as PageBody));
        if (route.status !== 204) return body;
        reply.send();
        return undefined;
      };
      // Synchronous when every resolver on the path answers synchronously (cached reads):
      // no promise, no extra tick; fastify sends a returned body and catches a thrown error.
      return (request: FastifyRequest, reply: FastifyReply) => {
        const context = createContext(app.resolvers, request.principal, request.meta, replyTransport(reply, secureCookies));
        const result = operation.query(undefined, context, mapping.variables?.(request) ?? {});
        return isPromise(result) ? result.then((settled) => finish(request, reply, settled)) : finish(request, reply, result);
      };
    }
  },
  { name: 'atrium-rest-compat', dependencies: ['atrium-graphql'] },
);
