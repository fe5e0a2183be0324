import { errorCatalog } from '../src/domains';
import { CURRENT_API_VERSION } from '../src/version';
import type { JsonSchema } from './route';
import type { CompiledRoute } from './compile';
import { httpValidationErrorSchema, problemSchema, validationErrorSchema } from './schemas';

const rateLimitHeaders = {
  'X-RateLimit-Limit': { $ref: '#/components/headers/X-RateLimit-Limit' },
  'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
  'X-RateLimit-Reset': { $ref: '#/components/headers/X-RateLimit-Reset' },
  'X-Service-Version': { $ref: '#/components/headers/X-Service-Version' },
  'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
};

function problem(description: string, ref = '#/components/schemas/ProblemDetail') {
  return { description, headers: rateLimitHeaders, content: { 'application/problem+json': { schema: { $ref: ref } } } };
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

function operation(compiled: CompiledRoute): JsonSchema {
  const { route, request } = compiled;
  const auth = compiled.policy.auth === 'public' ? 'public' : 'required';
  const paginated = 'paginated' in route && route.paginated;
  const responses: Record<string, unknown> = {};
  responses[String(route.status)] =
    route.status === 204
      ? { description: 'Done; no body', headers: rateLimitHeaders }
      : route.status >= 300 && route.status < 400
        ? {
            description: route.summary,
            headers: { ...rateLimitHeaders, Location: { schema: { type: 'string' }, description: 'Where the browser goes next' } },
          }
        : {
          description: route.summary,
          headers: paginated
            ? { ...rateLimitHeaders, Link: { $ref: '#/components/headers/Link' } }
            : rateLimitHeaders,
          content: { 'application/json': { schema: compiled.response } },
        };
  if (request.body) {
    responses['400'] = problem('Malformed JSON or unsupported API version');
    responses['413'] = problem('Body too large');
    responses['415'] = problem('Content-Type is not application/json');
  }
  if (auth === 'required') responses['401'] = problem('Missing, invalid or expired credential');
  for (const [status, description] of Object.entries(route.problems ?? {})) responses[status] ??= problem(description);
  if (request.body || request.params || request.querystring) responses['422'] = problem('Validation failed', '#/components/schemas/HTTPValidationError');
  responses['429'] = {
    ...problem('Rate limit exceeded'),
    headers: { ...rateLimitHeaders, 'Retry-After': { schema: { type: 'integer' }, description: 'Seconds to wait' } },
  };
  responses['500'] = problem('Unexpected error (masked; quote request_id)');
  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    ...(route.deprecation ? { deprecated: true } : {}),
    ...(route.extension ? { 'x-atrium-extension': true } : {}),
    security: auth !== 'required' ? [] : route.credential === 'module_key' ? [{ moduleKey: [] }] : [{ bearer: [] }, { cookie: [] }],
    parameters: parameters(compiled),
    ...(request.body ? { requestBody: { required: true, content: { 'application/json': { schema: request.body } } } } : {}),
    ...('multipart' in route && route.multipart
      ? {
          requestBody: {
            required: true,
            content: {
              'multipart/form-data': {
                schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary', description: 'The document' } } },
              },
            },
          },
        }
      : {}),
    responses,
  };
}

/** The OpenAPI 3.1 document, generated from the compiled route table. */
export function buildOpenApi(routes: readonly CompiledRoute[]): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const compiled of routes) {
    const path = compiled.route.path.replace(/:(\w+)/g, '{$1}');
    (paths[path] ??= {})[compiled.route.method.toLowerCase()] = operation(compiled);
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
        `details; each of the ${Object.keys(errorCatalog).length} codes has its page in the [error catalog](/docs/errors).`,
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
          description: 'Pins an API version (CalVer); versions before 2026.05.04 get {"detail": …} error bodies',
          schema: { type: 'string', enum: ['2026.05.04', '2026.04.21', '2026.03.30'] },
        },
      },
      headers: {
        'X-RateLimit-Limit': { schema: { type: 'integer' }, description: 'Requests allowed in the window' },
        'X-RateLimit-Remaining': { schema: { type: 'integer' }, description: 'Requests left in the window' },
        'X-RateLimit-Reset': { schema: { type: 'integer' }, description: 'Unix epoch seconds when the window resets' },
        'X-Service-Version': { schema: { type: 'string' }, description: 'The API version served' },
        'X-Request-Id': { schema: { type: 'string' }, description: 'Echoed or generated request id' },
        Link: {
          schema: { type: 'string' },
          description: 'RFC 8288 links of a paged list: first, prev, next and last (prev and next only where they exist)',
        },
      },
      schemas: {
        ProblemDetail: problemSchema,
        ValidationError: validationErrorSchema,
        HTTPValidationError: httpValidationErrorSchema,
      },
    },
  };
}
