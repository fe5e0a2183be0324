import { isDeepStrictEqual } from 'node:util';
import { errorCatalog } from '../src/domains';
import { CURRENT_API_VERSION, PROBLEM_DETAILS_SINCE, SUPPORTED_API_VERSIONS } from '../src/version';
import type { JsonSchema, RawRoute } from './route';
import type { CompiledRoute } from './compile';
import { httpValidationErrorSchema, legacyErrorSchema, paymentRequiredSchema, problemSchema, providerProblemSchema, scopeProblemSchema, validationErrorSchema } from './schemas';
import { MAX_PARAM_LENGTH } from '../src/host/errors';
import { UNSAFE_METHODS } from '../src/host/cookie-auth';

const rateLimitHeaders = {
  'X-RateLimit-Limit': { $ref: '#/components/headers/X-RateLimit-Limit' },
  'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
  'X-RateLimit-Reset': { $ref: '#/components/headers/X-RateLimit-Reset' },
  'RateLimit-Policy': { $ref: '#/components/headers/RateLimit-Policy' },
  RateLimit: { $ref: '#/components/headers/RateLimit' },
  'X-Service-Version': { $ref: '#/components/headers/X-Service-Version' },
  'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
};
/** Every 401's challenge (RFC 9110 §11.6.1), as AppError sets it. */
const WWW_AUTHENTICATE = {
  schema: { type: 'string' },
  description: 'Bearer realm="atrium"; with error="invalid_token" when a token was presented and refused (RFC 6750)',
};

/** A deprecated route's hook puts these on every answer, errors included. */
const deprecationHeaders = {
  Deprecation: { $ref: '#/components/headers/Deprecation' },
  Sunset: { $ref: '#/components/headers/Sunset' },
  Link: { $ref: '#/components/headers/Successor-Link' },
};

/** Problems with members beyond ProblemDetail's, by the code that carries them: a status whose description names the code declares them. */
const PROBLEMS_WITH_MEMBERS: Record<string, string> = {
  insufficient_scope: '#/components/schemas/ScopeProblem',
  ai_provider_error: '#/components/schemas/ProviderProblem',
};

function problemRef(description: string): string | undefined {
  return Object.entries(PROBLEMS_WITH_MEMBERS).find(([code]) => new RegExp(`\\b${code}\\b`).test(description))?.[1];
}

function parameters(compiled: CompiledRoute): JsonSchema[] {
  const out: JsonSchema[] = [];
  for (const [where, schema] of [
    ['path', compiled.request.params],
    ['query', compiled.request.querystring],
  ] as const) {
    const props = (schema?.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set((schema?.required ?? []) as string[]);
    for (const [name, s] of Object.entries(props)) {
      const { description, ...rest } = s;
      out.push({ name, in: where, required: where === 'path' || required.has(name), description, schema: rest });
    }
  }
  out.push({ $ref: '#/components/parameters/X-Service-API-Version' });
  return out;
}

/**
 * What the host answers for any operation of this shape, before or around
 * the route's own work (src/host: versions, credentials, the MFA-enrolment
 * gate, CSRF, body parsing, the router's parameter bound, budgets), so no
 * route has to list it.
 */
function hostProblems(compiled: CompiledRoute): Map<number, string[]> {
  const { route, policy } = compiled;
  const out = new Map<number, string[]>();
  const add = (status: number, reason: string) => out.set(status, [...(out.get(status) ?? []), reason]);
  const credentialed = policy.auth !== 'public';
  const hasParams = route.path.includes(':');
  add(400, 'unsupported_api_version: X-Service-API-Version names no version this server serves');
  if (hasParams) add(400, 'bad_request: a path parameter that does not decode (a stray %)');
  if (UNSAFE_METHODS.has(route.method)) add(400, 'malformed_json: a body sent as JSON that is not JSON in UTF-8');
  if (isMultipart(route)) add(400, 'bad_request: the multipart body cannot be read');
  if (credentialed) {
    add(
      401,
      route.credential === 'module_key'
        ? 'unauthenticated, token_invalid: no AI-modules key (sk_live_svc_…), or an invalid or revoked one; any other credential'
        : 'unauthenticated, token_invalid, token_expired: a missing, invalid or expired credential; an AI-modules key',
    );
    // The gate closes nothing to an AI-modules key, nor a field allowed during enrolment.
    if (route.credential !== 'module_key' && !policy.duringMfaEnrollment) {
      add(403, 'mfa_enrollment_required: the company requires MFA and the signed-in user has not enrolled yet');
    }
    add(403, "ip_not_allowed: the caller's address is outside the company's IP allow-list");
  }
  if (UNSAFE_METHODS.has(route.method)) {
    add(403, 'csrf_rejected: the service_token cookie is the credential (no Authorization header) and the request does not come from an allowed Origin');
    add(413, 'payload_too_large: the body is larger than the server accepts');
    add(415, `unsupported_media_type: a body that is not ${isMultipart(route) ? 'multipart/form-data' : 'application/json'}`);
  }
  if (hasParams) add(414, `uri_too_long: a path parameter longer than ${MAX_PARAM_LENGTH} characters`);
  add(429, 'rate_limited: the budget of the window is spent');
  add(500, 'internal_error: unexpected (masked; quote request_id)');
  if (compiled.operation?.mayWait) add(503, 'server_busy: too many heavier operations are waiting (a long page among them); retry after Retry-After');
  return out;
}

const isMultipart = (route: CompiledRoute['route']): route is RawRoute & { multipart: JsonSchema } => 'multipart' in route && route.multipart !== undefined;

/** The success answer's content by media type: a raw route's own (a download, a stream), else its JSON body. */
function successContent(compiled: CompiledRoute): Record<string, { schema: JsonSchema }> | undefined {
  const declared = 'content' in compiled.route ? compiled.route.content : undefined;
  if (declared) return Object.fromEntries(Object.entries(declared).map(([type, schema]) => [type, { schema }]));
  return compiled.response ? { 'application/json': { schema: compiled.response } } : undefined;
}

/** The route with its success schema (or, for a list, its items) by reference when the route names it. */
function withNamedResponse(compiled: CompiledRoute, ref: (name: string, schema: JsonSchema) => JsonSchema): CompiledRoute {
  const name = compiled.route.responseName;
  const response = compiled.response;
  if (!name || !response) return compiled;
  const list = response.type === 'array' && response.items !== undefined;
  return { ...compiled, response: list ? { ...response, items: ref(name, response.items as JsonSchema) } : ref(name, response) };
}

/** A request body's schema, by reference where it is named (components.schemas). */
type BodyRef = (schema: JsonSchema) => JsonSchema;

function operation(compiled: CompiledRoute, bodyRef: BodyRef): JsonSchema {
  const { route, request } = compiled;
  const auth = compiled.policy.auth === 'public' ? 'public' : 'required';
  const paginated = 'paginated' in route && route.paginated;
  const headers = route.deprecation ? { ...rateLimitHeaders, ...deprecationHeaders } : rateLimitHeaders;
  // Every error answer is a problem, or the legacy body for a client pinned to an older version.
  const problem = (description: string, ref = '#/components/schemas/ProblemDetail') => ({
    description,
    headers,
    content: {
      'application/problem+json': { schema: { $ref: ref } },
      'application/json': { schema: { $ref: '#/components/schemas/LegacyError' } },
    },
  });
  const responses: Record<string, unknown> = {};
  const content = successContent(compiled);
  responses[String(route.status)] =
    route.status === 204
      ? { description: 'Done; no body', headers }
      : route.status >= 300 && route.status < 400
        ? {
            description: route.summary,
            headers: { ...headers, Location: { schema: { type: 'string' }, description: 'Where the browser goes next' } },
          }
        : {
            description: route.summary,
            headers: paginated ? { ...headers, Link: { $ref: '#/components/headers/Link' } } : headers,
            ...(content ? { content } : {}),
          };
  // The route's own reasons first, then what the host adds for an operation of its shape.
  const reasons = new Map<number, string[]>();
  for (const [status, description] of Object.entries(route.problems ?? {})) reasons.set(Number(status), [description]);
  for (const [status, host] of hostProblems(compiled)) reasons.set(status, [...(reasons.get(status) ?? []), ...host]);
  if (!reasons.has(422) && (request.body || request.params || request.querystring || isMultipart(route))) {
    reasons.set(422, ['validation_error: the request does not match its schema']);
  }
  for (const status of [...reasons.keys()].sort((a, b) => a - b)) {
    const description = reasons.get(status)!.join('; ');
    responses[String(status)] =
      status === 422
        ? problem(description, '#/components/schemas/HTTPValidationError')
        : status === 402
          ? problem(description, '#/components/schemas/PaymentRequiredProblem')
          : status === 429 || (status === 503 && compiled.operation?.mayWait)
            ? { ...problem(description), headers: { ...headers, 'Retry-After': { schema: { type: 'integer' }, description: 'Seconds to wait' } } }
            : status === 401
              ? { ...problem(description, problemRef(description)), headers: { ...headers, 'WWW-Authenticate': WWW_AUTHENTICATE } }
              : problem(description, problemRef(description));
  }
  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    ...(route.deprecation ? { deprecated: true } : {}),
    ...(route.extension ? { 'x-atrium-extension': true } : {}),
    security: auth !== 'required' ? [] : route.credential === 'module_key' ? [{ moduleKey: [] }] : [{ bearer: [] }, { cookie: [] }],
    parameters: parameters(compiled),
    ...(request.body ? { requestBody: { required: true, content: { 'application/json': { schema: bodyRef(request.body) } } } } : {}),
    ...(isMultipart(route)
      ? { requestBody: { required: true, content: { 'multipart/form-data': { schema: route.multipart } } } }
      : {}),
    responses,
  };
}

/** The OpenAPI 3.1 document, generated from the compiled route table. */
export function buildOpenApi(routes: readonly CompiledRoute[]): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {};
  const named: Record<string, JsonSchema> = {};
  // A schema the spec names (a body's title, a route's responseName) is written once and referenced.
  const ref = (name: string, schema: JsonSchema): JsonSchema => {
    if (named[name] && !isDeepStrictEqual(named[name], schema)) throw new Error(`Two different schemas are named ${name}`);
    named[name] = schema;
    return { $ref: `#/components/schemas/${name}` };
  };
  for (const compiled of routes) {
    const path = compiled.route.path.replace(/:(\w+)/g, '{$1}');
    const bodyRef: BodyRef = (schema) => (typeof schema.title === 'string' ? ref(schema.title, schema) : schema);
    (paths[path] ??= {})[compiled.route.method.toLowerCase()] = operation(withNamedResponse(compiled, ref), bodyRef);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Atrium API',
      version: CURRENT_API_VERSION,
      description:
        'The REST surface of Atrium, a self-hostable API server for an AI workspace. Every path is served under ' +
        'both /v1 and /api/v1, and runs the same resolvers as the GraphQL supergraph at /graphql. Sign in with ' +
        'POST /auth/login and send the access token as `Authorization: Bearer …`. Errors are RFC 9457 problem ' +
        `details (a LegacyError for a client pinned before ${PROBLEM_DETAILS_SINCE}); each of the ` +
        `${Object.keys(errorCatalog).length} codes has its page in the [error catalog](/docs/errors).`,
    },
    // Relative: "Try it out" calls whichever host name the page was opened as (RFC 3986 reference from /openapi.json).
    servers: [
      { url: '/v1', description: 'Production prefix' },
      { url: '/api/v1', description: 'Staging prefix (same routes)' },
    ],
    tags: [
      { name: 'Platform', description: 'Health, model catalog and documentation feedback' },
      { name: 'Authentication', description: 'Sign-in, tokens and the caller profile' },
      { name: 'Administration', description: 'Company administration by owners, admins and company API keys' },
      { name: 'Billing', description: 'Credits and their ledger, plans and subscriptions, top-ups, invoices, usage' },
      { name: 'AI modules', description: 'The key-authenticated AI modules API (sk_live_svc_ keys only): chat, studio, agents, usage' },
      { name: 'AI modules: documents', description: 'Document upload and question answering (scope rag)' },
      { name: 'AI modules: keys', description: "A user's own AI-modules keys, managed with the user's access token" },
    ],
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'An access token (JWT) or a company API key (svc_…)',
        },
        moduleKey: {
          type: 'http',
          scheme: 'bearer',
          description: "A user's AI-modules key (sk_live_svc_…): the only credential the AI modules API takes, and taken nowhere else",
        },
        cookie: {
          type: 'apiKey',
          in: 'cookie',
          name: 'service_token',
          description:
            'The browser session cookie set by single sign-on; used only without an Authorization header. ' +
            'POST, PUT, PATCH and DELETE with it must carry an Origin (or Referer) of PUBLIC_URL or CORS_ORIGINS, else 403 csrf_rejected.',
        },
      },
      parameters: {
        'X-Service-API-Version': {
          name: 'X-Service-API-Version',
          in: 'header',
          required: false,
          description:
            `Pins an API version (CalVer). Versions before ${PROBLEM_DETAILS_SINCE} get their error answers as application/json ` +
            'LegacyError bodies ({"detail", "code"}) instead of application/problem+json problem details',
          schema: { type: 'string', enum: [...SUPPORTED_API_VERSIONS] },
        },
      },
      headers: {
        'X-RateLimit-Limit': { schema: { type: 'integer' }, description: 'Requests allowed in the window' },
        'X-RateLimit-Remaining': { schema: { type: 'integer' }, description: 'Requests left in the window' },
        'X-RateLimit-Reset': { schema: { type: 'integer' }, description: 'Unix epoch seconds when the window resets' },
        'RateLimit-Policy': {
          schema: { type: 'string' },
          description: 'IETF RateLimit-Policy: the budget spent, its quota and window in seconds, e.g. `"default";q=600;w=60`',
        },
        RateLimit: {
          schema: { type: 'string' },
          description: 'IETF RateLimit: the budget spent, requests left and seconds until the window resets, e.g. `"default";r=599;t=42`',
        },
        'X-Service-Version': {
          schema: { type: 'string', enum: [...SUPPORTED_API_VERSIONS] },
          description: `The API version served: the one pinned with X-Service-API-Version, else the current ${CURRENT_API_VERSION}`,
        },
        'X-Request-Id': { schema: { type: 'string' }, description: 'Echoed or generated request id' },
        Link: {
          schema: { type: 'string' },
          description: 'RFC 8288 links of a paged list: first, prev, next and last (prev and next only where they exist)',
        },
        Deprecation: { schema: { type: 'string' }, description: 'RFC 9745: when the operation was deprecated, e.g. `@1767225600`' },
        Sunset: { schema: { type: 'string' }, description: 'RFC 8594: the HTTP date after which the operation is removed' },
        'Successor-Link': {
          schema: { type: 'string' },
          description: 'RFC 8288 link to the operation that replaces a deprecated one, under the prefix called, with rel="successor-version"',
        },
      },
      schemas: {
        ...Object.fromEntries(Object.entries(named).sort(([a], [b]) => a.localeCompare(b))),
        ProblemDetail: problemSchema,
        ValidationError: validationErrorSchema,
        HTTPValidationError: httpValidationErrorSchema,
        PaymentRequiredProblem: paymentRequiredSchema,
        ScopeProblem: scopeProblemSchema,
        ProviderProblem: providerProblemSchema,
        LegacyError: legacyErrorSchema,
      },
    },
  };
}
