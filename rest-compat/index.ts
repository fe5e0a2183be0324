import fp from 'fastify-plugin';
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaCompiler } from 'fastify';
import type { FastifySchemaValidationError, FastifyValidationResult } from 'fastify/types/schema';
import type { ExecutionResult } from 'graphql';
import type { Principal } from '../src/auth/principal';
import type { Deprecation } from '../src/host/types';
import { replyTransport } from '../src/host/graphql';
import { createContext } from '../subgraphs/context';
import { fromGraphQLError, restIssues, toGraphQLError } from '../subgraphs/errors';
import { singleField, type AdmittedOperation } from '../subgraphs/policy/gate';
import type { MeasuredDocument } from '../subgraphs/policy/limits';
import { AppError, isAppError } from '../src/errors/catalog';
import { compileOperation } from './compiled-operation';
import type { CompiledRoute } from './compile';
import type { JsonSchema } from './shapes';
import { pageLinks, type PageBody } from './pagination';
import { API_PREFIXES } from './route';
import { refusedText } from '../src/errors/refused-text';
import { UNKNOWN_FIELD } from '../src/errors/to-app-error';
import { isPromise } from '../src/is-promise';
import { modulesApiSpelling } from '../src/domains/ai';

export { compileRoutes, type CompiledRoute } from './compile';
export { routeTable } from './routes';

/** RFC 9745 Deprecation, RFC 8594 Sunset and the successor's Link (under the prefix the route was called by), on a deprecated route only. */
function deprecationHeaders(deprecation: Deprecation, prefix: string) {
  const link = `<${prefix}${deprecation.link}>; rel="successor-version"`;
  return async (_request: FastifyRequest, reply: FastifyReply) => {
    reply.header('deprecation', deprecation.deprecation);
    reply.header('sunset', deprecation.sunset);
    reply.header('link', link);
  };
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => unknown;

/** A handler of the AI modules API: billing's 402s answered as that API spells them (ai-modules-api.md), whether thrown or rejected. */
function modulesApiErrors(handler: Handler): Handler {
  const spelled = (error: unknown): never => {
    throw modulesApiSpelling(error);
  };
  return (request, reply) => {
    let result: unknown;
    try {
      result = handler(request, reply);
    } catch (error) {
      return spelled(error);
    }
    return isPromise(result) ? result.then(undefined, spelled) : result;
  };
}

/**
 * The app's validator with one rule more: no text of the path, query or body
 * (object keys included) holds U+0000 or a lone surrogate (see
 * src/errors/refused-text.ts). Its failures
 * join the schema's, as 422 items at [part, ...path]. This covers raw routes
 * and whatever a service reads outside a GraphQL field's arguments.
 */
function refusingUnkeepableText(compile: FastifySchemaCompiler<unknown>): FastifySchemaCompiler<unknown> {
  return (route) => {
    const validate = compile(route) as FastifyValidationResult & { schemaEnv?: unknown };
    const checked = ((data: unknown, ...rest: unknown[]) => {
      const valid = (validate as (data: unknown, ...rest: unknown[]) => unknown)(data, ...rest);
      const schemaErrors = valid === false ? (validate.errors ?? []) : [];
      const refused = refusedText(data).map(
        ({ path, issue }): FastifySchemaValidationError => ({
          keyword: issue.type,
          instancePath: path.map((segment) => `/${String(segment).replace(/~/g, '~0').replace(/\//g, '~1')}`).join(''),
          schemaPath: '#/text',
          params: {},
          message: issue.msg,
        }),
      );
      checked.errors = [...schemaErrors, ...refused];
      return valid !== false && refused.length === 0;
    }) as FastifyValidationResult;
    // Ajv's own functions take the parent (to replace a coerced root value); keep that as fastify sees it.
    return Object.assign(checked, { schemaEnv: validate.schemaEnv });
  };
}

/** The 422 of query parameters a route does not take, as its validation would answer it. */
function refuseQueryParameters(query: Record<string, unknown>): void {
  const names = Object.keys(query);
  if (names.length) throw AppError.validation(names.map((name) => ({ loc: ['query', name], ...UNKNOWN_FIELD })));
}

/**
 * Registers every route (compiled against the served schema, see
 * compile.ts) under /v1 and /api/v1. A GraphQL route runs its field's
 * operation in-process, compiled once, so REST and GraphQL share resolvers,
 * rules, errors and the policy layer.
 */
export const restCompatPlugin = fp<{ routes: readonly CompiledRoute[] }>(
  async (app, options) => {
    const secureCookies = app.config.publicUrl.startsWith('https://');

    // The routes live in their own scope that parses JSON bodies only: fastify's
    // built-in text/plain parser would turn a text body into a 422 instead of a 415.
    await app.register(async (scope) => {
      scope.removeContentTypeParser('text/plain');
      const compile = scope.validatorCompiler;
      if (!compile) throw new Error('The REST adapter validates with the app\'s validator compiler; set it before registering');
      scope.setValidatorCompiler(refusingUnkeepableText(compile));
      const isUpload = (compiled: CompiledRoute) => 'raw' in compiled.route && compiled.route.multipart !== undefined;
      for (const compiled of options.routes) if (!isUpload(compiled)) registerRoute(scope, compiled);
      // Multipart bodies for upload routes only (anywhere else they stay 415): each reads its file with its own limits.
      await scope.register(async (uploads) => {
        await uploads.register(multipart, { limits: { fileSize: 1, files: 1, fields: 5, parts: 6, fieldSize: 1024 }, throwFileSizeLimit: true });
        for (const compiled of options.routes) if (isUpload(compiled)) registerRoute(uploads, compiled);
      });
    });

    function registerRoute(scope: FastifyInstance, compiled: CompiledRoute) {
      const { route, policy } = compiled;
      // A GraphQL route that takes no query parameters refuses any in its handler: fastify's validation
      // of an empty query-string schema would cost every request of the route (the profile read among them).
      const { querystring, ...request } = compiled.request;
      const noQuery = !('raw' in route) && querystring !== undefined && Object.keys(querystring.properties ?? {}).length === 0;
      const handler = 'raw' in route ? route.raw : graphqlHandler(compiled, noQuery);
      const served = route.credential === 'module_key' ? modulesApiErrors(handler) : handler;
      // A GraphQL route's ids are lowered by the policy layer, as over GraphQL (subgraphs/policy/bounds.ts); a raw route's here.
      const ids = 'raw' in route ? { params: uuidMembers(request.params), query: uuidMembers(querystring) } : { params: [], query: [] };
      for (const prefix of API_PREFIXES) {
        scope.route({
          method: route.method,
          url: prefix + route.path,
          schema: {
            ...request,
            ...(noQuery || querystring === undefined ? {} : { querystring }),
            ...(compiled.response ? { response: { [route.status]: compiled.response } } : {}),
          },
          ...(ids.params.length || ids.query.length ? { preValidation: lowerCaseIds(ids) } : {}),
          // The credential requirement and the budget are the policy of the field the route runs.
          config: {
            auth: policy.auth === 'public' ? 'public' : 'required',
            rateLimit: policy.rateLimit ?? 'default',
            deprecation: route.deprecation,
            ...(route.credential ? { credential: route.credential } : {}),
          },
          // The budget is spent by the host's rate-limit hook (the route's config); what is left to admit is
          // the MFA-enrolment gate, which a field allowed during enrolment never closes (no hook at all), and
          // an AI-modules key's daily requests, which the same gate counts.
          preHandler: policy.duringMfaEnrollment && route.credential !== 'module_key' ? [] : [admitted(singleField(compiled.operation?.field ?? route.path, policy))],
          ...(route.deprecation ? { onSend: deprecationHeaders(route.deprecation, prefix) } : {}),
          handler: served,
        });
      }
    }

    /**
     * UUIDs are case-insensitive (RFC 9562) and Atrium stores them lower-case: an id a client
     * upper-cased names the same row. Only raw routes that take one run this.
     */
    function lowerCaseIds(ids: { params: string[]; query: string[] }) {
      return (request: FastifyRequest, _reply: FastifyReply, done: () => void) => {
        for (const [names, values] of [[ids.params, request.params], [ids.query, request.query]] as const) {
          for (const name of names) {
            const value = (values as Record<string, unknown>)[name];
            if (typeof value === 'string') (values as Record<string, unknown>)[name] = value.toLowerCase();
          }
        }
        done();
      };
    }

    /** The policy layer's verdict before the handler: a caller owing MFA enrolment runs as anonymous unless the field allows it. */
    function admitted(operation: AdmittedOperation) {
      return (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
        let principal: Principal | Promise<Principal>;
        try {
          principal = app.gate.admit(operation, request.principal, request.ip, { spend: false, enrollment: true });
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

    /** A route's document against the caps: an operator's caps may be lower than a route needs, and it is refused as a client's would be. */
    function measure(document: string): MeasuredDocument | AppError {
      try {
        return app.gate.read(document);
      } catch (error) {
        if (error instanceof AppError) return error;
        throw error;
      }
    }

    function graphqlHandler(compiled: CompiledRoute, noQuery: boolean) {
      const { route } = compiled;
      const mapping = compiled.operation!;
      const operation = compileOperation(app.graphql.schema, mapping.document, `${route.method} ${route.path}`);
      const paginated = 'paginated' in route && route.paginated;
      // Measured once, as every GraphQL operation is: a route's document is fixed, and only a
      // page size from the query string can change its cost (checked per request).
      const measured = measure(mapping.document);
      const finish = (request: FastifyRequest, reply: FastifyReply, result: ExecutionResult) => {
        // A resolver's error keeps its catalog code; anything unknown is logged and masked, as over GraphQL.
        if (result.errors?.length) {
          const first = result.errors[0]!;
          // A resolver's catalog error is answered as REST names it (a validation issue at its request location).
          throw isAppError(first.originalError) ? restIssues(first.originalError) : fromGraphQLError(toGraphQLError(first, request.log));
        }
        reply.code(route.status);
        if (route.status === 204) {
          reply.send();
          return undefined;
        }
        const body = mapping.body((result.data as Record<string, unknown>)[mapping.field]);
        if (paginated) reply.header('link', pageLinks(app.config.publicUrl, request.url, body as PageBody));
        return body;
      };
      // Synchronous when every resolver on the path answers synchronously (cached reads):
      // no promise, no extra tick; fastify sends a returned body and catches a thrown error.
      return (request: FastifyRequest, reply: FastifyReply) => {
        if (measured instanceof AppError) throw measured;
        if (noQuery && request.url.includes('?')) refuseQueryParameters(request.query as Record<string, unknown>);
        const variables = mapping.variables(request);
        const measuredOperation = measured.operations[0]!;
        const cost = measuredOperation.costUsesVariables ? app.gate.operation(measured, null, variables)!.cost : measuredOperation.cost;
        // A long page takes its turn with every other heavier operation; a profile read never waits.
        const run = app.gate.scheduler.schedule(cost);
        const context = createContext(app.resolvers, request.principal, request.meta, replyTransport(reply, secureCookies), run);
        const result = operation.query(undefined, context, variables);
        return isPromise(result) ? result.then((settled) => finish(request, reply, settled)) : finish(request, reply, result);
      };
    }
  },
  { name: 'atrium-rest-compat', dependencies: ['atrium-graphql'] },
);

/** The members of an object schema that are UUIDs. */
function uuidMembers(schema: JsonSchema | undefined): string[] {
  const members = (schema?.properties ?? {}) as Record<string, JsonSchema>;
  return Object.keys(members).filter((name) => members[name]!.format === 'uuid');
}
