import fp from 'fastify-plugin';
import mercurius, { type MercuriusContext } from 'mercurius';
import { GraphQLError, Kind, type DocumentNode, type ExecutionResult } from 'graphql';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, isAppError } from '../errors/catalog';
import { anonymous } from '../auth/principal';
import { createContext, Loaders, type GraphQLContext } from '../../subgraphs/context';
import type { Supergraph } from '../../subgraphs/supergraph';
import { resolvePrincipal } from './principal';
import type { RateLimitClass } from './types';

/** Root fields that spend a stricter budget than the endpoint's, shared with their REST paths. */
const operationClasses: Record<string, RateLimitClass> = {
  login: 'auth',
  refreshToken: 'auth',
  logout: 'auth',
  submitDocsFeedback: 'feedback',
};

function operationClass(document: DocumentNode): RateLimitClass | undefined {
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    for (const selection of definition.selectionSet.selections) {
      if (selection.kind === Kind.FIELD && operationClasses[selection.name.value]) return operationClasses[selection.name.value];
    }
  }
  return undefined;
}

export function sessionCookieClearing(name: string, secure: boolean): string {
  return `${name}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** The GraphQL error shape: the catalog code and HTTP status in extensions. */
export function toGraphQLError(error: GraphQLError, log: { error: (obj: object, msg: string) => void }): GraphQLError {
  const original = error.originalError;
  let appError: AppError;
  if (isAppError(original)) appError = original;
  else if (!original || original instanceof GraphQLError) {
    // graphql-js' own errors: the document or its variables do not fit the schema.
    appError = new AppError('bad_request', error.message);
  } else {
    log.error({ err: original }, 'unhandled resolver error');
    appError = new AppError('internal_error', 'An unexpected error occurred');
  }
  return new GraphQLError(appError.message, {
    nodes: error.nodes,
    path: error.path,
    extensions: { code: appError.code, http: { status: appError.status }, ...appError.extra },
  });
}

export const graphqlPlugin = fp<{ supergraph: Supergraph }>(
  async (app, { supergraph }) => {
    const services = app.services;
    const secureCookies = services.config.publicUrl.startsWith('https://');

    await app.register(mercurius, {
      schema: supergraph.schema,
      path: '/graphql',
      graphiql: false,
      jit: 1,
      queryDepth: 12,
      routes: true,
      context: (request: FastifyRequest, reply: FastifyReply): GraphQLContext =>
        createContext(services, request.principal, request.meta, {
          clearCookie: (name) => reply.header('set-cookie', sessionCookieClearing(name, secureCookies)),
        }),
      subscription: {
        // Queries and mutations work over the socket too, not only subscriptions.
        fullWsTransport: true,
        context: (_socket, request: FastifyRequest) => ({
          services,
          meta: request.meta,
          principal: anonymous,
          // A socket lives long: batch within an operation, never cache across them.
          loaders: new Loaders(services, { cache: false }),
        }),
        // The credential travels in connectionParams: { authorization: "Bearer …" }.
        onConnect: async ({ payload }: { payload?: Record<string, unknown> }) => {
          const raw = payload?.authorization ?? payload?.Authorization;
          if (typeof raw !== 'string') return false;
          const principal = await resolvePrincipal(services, raw);
          if (principal.kind === 'anonymous') return false;
          return { principal };
        },
      },
      errorFormatter: (execution: ExecutionResult, context: MercuriusContext) => {
        const log = context.reply?.log ?? app.log;
        let statusCode = 200;
        const errors: GraphQLError[] = [];
        for (const error of execution.errors ?? []) {
          const nested = (error.originalError as { errors?: unknown[] } | undefined)?.errors;
          if (Array.isArray(nested)) {
            // Mercurius wraps document validation failures; they are the client's to fix.
            statusCode = 400;
            for (const inner of nested) {
              errors.push(toGraphQLError(new GraphQLError((inner as Error).message), log));
            }
            continue;
          }
          const formatted = toGraphQLError(error, log);
          if (formatted.extensions.code === 'rate_limited') statusCode = 429;
          errors.push(formatted);
        }
        return { statusCode, response: { data: execution.data ?? null, errors } };
      },
    });

    app.graphql.addHook('preExecution', async (_schema, document, context) => {
      const ctx = context as unknown as MercuriusContext & GraphQLContext & { viaRest?: boolean };
      // The REST adapter already spent its route's budget for this request.
      if (ctx.viaRest) return;
      const cls = operationClass(document);
      if (cls) app.rateLimit(cls, ctx.principal, ctx.meta.ip, ctx.reply);
    });
  },
  { name: 'atrium-graphql', dependencies: ['atrium-rate-limit'] },
);
