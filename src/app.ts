import 'reflect-metadata';
import Fastify, { LogController, type FastifyInstance, type FastifyRequest } from 'fastify';
import cors from '@fastify/cors';
import websocket from '@fastify/websocket';
import { anonymous } from './auth/principal';
import { loadConfig, type Config } from './config';
import { requestIdFrom } from './request-id';
import { boot, inContext } from './boot';
import { errorCatalog } from './domains';
import { apiVersionPlugin, serviceHeadersPlugin } from './host/api-version';
import { unitOfWorkPlugin } from './host/unit-of-work';
import { principalPlugin } from './host/principal';
import { rateLimitPlugin } from './host/rate-limit';
import { clientErrorHandler, errorsPlugin, frameworkErrors, MAX_PARAM_LENGTH } from './host/errors';
import { jsonBodyPlugin } from './host/json-body';
import { validatorCompiler } from './host/validation';
import { graphqlPlugin } from './host/graphql';
import { docsPlugin } from './host/docs';
import { startupLine, webPlugin } from './host/web';
import { describeListenError, ListenRefused, SERVER_LISTEN_SETTINGS } from './kernel/listen-error';
import { lazyChildLogger } from './host/lazy-logger';
import { memoryReliefPlugin } from './host/memory-relief';
import { shutdownPlugin } from './host/shutdown';
import { GRAPHQL_TRANSPORT_WS } from './host/ws-protocol';
import { loggableUrl, pinoRedaction } from './kernel/log-redaction';
import './host/types';
import { buildSupergraph, supergraphContainer } from '../subgraphs/supergraph';
import { compileRoutes, restCompatPlugin, routeTable } from '../rest-compat';
import { buildOpenApi } from '../rest-compat/openapi';
import { recordServer } from './server-record';
import { proxyTrust } from './kernel/trust-proxy';

export interface BuildOptions {
  /** Settings over the environment's (tests pass a temp DATA_DIR etc.). */
  config?: Partial<Config>;
  env?: Record<string, string | undefined>;
  /** Pino options; defaults to JSON logs at config.logLevel on stdout. Redaction is added either way. */
  logger?: boolean | { level: string; stream?: { write(line: string): void } };
}

/** Builds the whole app without listening; main.ts listens, tests inject. */
export async function buildApp(options: BuildOptions = {}): Promise<FastifyInstance> {
  const config = loadConfig(options.env, options.config);
  // A server runs the job worker (mail delivery, due deletions, idle sessions, cleanup); CLI commands boot without it.
  const atrium = await boot(config, { background: true });
  // For `atrium subgraph` on the same DATA_DIR: the issuer of this server's tokens.
  recordServer(config.dataDir, config.publicUrl);
  const supergraph = await buildSupergraph();
  // Which X-Forwarded-For entries to believe, one judgement for request.ip and the requests fastify builds for framework errors.
  const trust = proxyTrust(config.trustProxy);

  const app = Fastify({
    // Secrets never reach a line, whatever fails (src/kernel/log-redaction.ts).
    logger:
      options.logger === false
        ? false
        : { level: config.logLevel, ...(typeof options.logger === 'object' ? options.logger : {}), ...pinoRedaction() },
    // One access-log line per request, written in onResponse below.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyChildLogger,
    trustProxy: trust,
    bodyLimit: config.bodyLimitBytes,
    requestIdHeader: false,
    genReqId: (req) => requestIdFrom(req.headers['x-request-id']),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // What fails before routing (a path that does not decode, an over-long parameter) or
    // in node's HTTP parser (oversize or invalid head) is a problem too.
    frameworkErrors: frameworkErrors(trust),
    clientErrorHandler,
  });
  app.setValidatorCompiler(validatorCompiler());
  app.decorate('config', config);
  app.decorate('kernel', atrium.kernel);
  app.decorate('domains', atrium.domains);
  app.decorate('resolvers', supergraphContainer(atrium.domains));
  atrium.kernel.log.use(app.log);
  app.addHook('onClose', async () => atrium.close());
  // The access log costs a hook per request; skip it when its level is off.
  if (['trace', 'debug', 'info'].includes(app.log.level)) {
    app.addHook('onResponse', async (request, reply) => {
      request.log.info(
        { method: request.method, url: loggableUrl(request.url), status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
        'request completed',
      );
    });
  }

  // WebSockets before any hook that may refuse a request: the plugin's onRequest hook marks
  // an upgrade, and its onResponse hook closes the socket of one refused (429, 403, 404).
  // Registered by mercurius after those hooks, a refused upgrade was never marked and its
  // socket stayed open (CLOSE-WAIT) for good. mercurius uses the one registered here.
  await app.register(websocket, {
    options: {
      maxPayload: 1_048_576,
      // Chosen among several offered; an upgrade offering none of it is refused before this (src/host/graphql.ts).
      handleProtocols: (offered) => (offered.has(GRAPHQL_TRANSPORT_WS) ? GRAPHQL_TRANSPORT_WS : false),
    },
    // As the plugin's own, but each socket closes with 1001 Going Away: without a code a client reads
    // 1005, as it would a dropped network, where a planned stop is one to reconnect after.
    preClose(done) {
      for (const client of this.websocketServer.clients) client.close(1001, 'The server is shutting down');
      this.websocketServer.close();
      done();
    },
  });
  // Jobs stop and streams end before the HTTP server waits for its connections.
  await app.register(shutdownPlugin);
  await app.register(memoryReliefPlugin);
  await app.register(serviceHeadersPlugin);
  await app.register(errorsPlugin);
  await app.register(jsonBodyPlugin);
  // Closed by default: without configured origins the plugin is not even registered
  // (it would run on every request only to add nothing).
  if (config.corsOrigins.length) {
    const corsOptions = {
      origin: config.corsOrigins,
      credentials: true,
      methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
      allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id', 'X-Service-API-Version'],
      maxAge: 600,
      exposedHeaders: [
        'X-Request-Id',
        'X-Service-Version',
        'X-RateLimit-Limit',
        'X-RateLimit-Remaining',
        'X-RateLimit-Reset',
        'RateLimit',
        'RateLimit-Policy',
        'Retry-After',
        'Link',
      ],
    };
    // Only a real preflight (Origin and Access-Control-Request-Method) is the plugin's to answer:
    // any other OPTIONS (a monitor, `curl -X OPTIONS`) would get its bare text/plain 400, so it
    // goes on like every request, to the same 405 with Allow (or 404) as without CORS.
    const notPreflight = { ...corsOptions, preflight: false };
    const isPreflight = (request: FastifyRequest) => Boolean(request.headers.origin && request.headers['access-control-request-method']);
    // The plugin answers a preflight before the budget hook runs: it spends its address's budget here,
    // so it carries the rate-limit headers every answer does, and a flood of them is refused as any is.
    app.addHook('onRequest', (request, reply, done) => {
      if (request.method !== 'OPTIONS' || !isPreflight(request)) return done();
      try {
        app.rateLimit('default', anonymous, request.ip, reply);
      } catch (error) {
        return done(error as Error);
      }
      done();
    });
    await app.register(cors, {
      delegator: (request, callback) =>
        callback(null, isPreflight(request) ? corsOptions : notPreflight),
    });
  }
  await app.register(unitOfWorkPlugin);
  await app.register(principalPlugin);
  await app.register(rateLimitPlugin);
  await app.register(apiVersionPlugin);
  await app.register(graphqlPlugin, { supergraph });
  // The REST surface, derived from the served schema once: shapes, schemas, policies.
  const restRoutes = compileRoutes(supergraph.schema, routeTable);
  await app.register(restCompatPlugin, { routes: restRoutes });
  await app.register(webPlugin);
  await app.register(docsPlugin, { openapi: buildOpenApi(restRoutes), errors: errorCatalog });
  return app;
}

/**
 * Listens on HOST:PORT (`npm start` and `atrium serve` alike), logging one
 * start-up line per address in place of fastify's "Server listening at".
 * A port that cannot be had closes the app (buildApp opened the database
 * and started the worker) and is a ListenRefused naming the setting to change.
 */
export async function listen(app: FastifyInstance): Promise<void> {
  const { host, port } = app.config;
  const summary = await inContext(app.kernel.orm, () => app.serverSummary());
  try {
    await app.listen({ host, port, listenTextResolver: (address) => startupLine(address, summary) });
  } catch (error) {
    await app.close();
    const line = describeListenError(error, { host, port }, SERVER_LISTEN_SETTINGS);
    throw line ? new ListenRefused(line) : error;
  }
}
