import type { RestRoute } from '../route';
import { dateTime, uuid } from '../schemas';

interface ModelData {
  id: string;
  displayName: string;
  provider: string;
  family: string;
  creditCost: number;
  contextLength: number;
}

export const platformRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/health',
    operationId: 'getHealth',
    summary: 'Service health',
    description: 'Public. Reports whether the service and its database answer.',
    tag: 'Platform',
    auth: 'public',
    status: 200,
    response: {
      type: 'object',
      required: ['status', 'version', 'database', 'uptime_seconds'],
      properties: {
        status: { type: 'string', enum: ['ok', 'degraded'] },
        version: { type: 'string', description: 'The API version served (CalVer)' },
        database: { type: 'string', enum: ['ok', 'unavailable'] },
        uptime_seconds: { type: 'integer' },
      },
    },
    graphql: {
      document: 'query Health { health { status version database uptimeSeconds } }',
      result: (data) => {
        const h = data.health as { status: string; version: string; database: string; uptimeSeconds: number };
        return { status: h.status, version: h.version, database: h.database, uptime_seconds: h.uptimeSeconds };
      },
    },
  },
  {
    method: 'GET',
    path: '/models',
    operationId: 'listModels',
    summary: 'Available AI models',
    description: 'All models of the catalog that an administrator has not blocked, with display names.',
    tag: 'Platform',
    auth: 'required',
    status: 200,
    response: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'display_name', 'provider', 'family', 'credit_cost', 'context_length'],
        properties: {
          id: { type: 'string' },
          display_name: { type: 'string' },
          provider: { type: 'string' },
          family: { type: 'string' },
          credit_cost: { type: 'integer', description: 'Credits per 1,000 tokens' },
          context_length: { type: 'integer' },
        },
      },
    },
    graphql: {
      document: 'query Models { models { id displayName provider family creditCost contextLength } }',
      result: (data) =>
        (data.models as ModelData[]).map((m) => ({
          id: m.id,
          display_name: m.displayName,
          provider: m.provider,
          family: m.family,
          credit_cost: m.creditCost,
          context_length: m.contextLength,
        })),
    },
  },
  {
    method: 'GET',
    path: '/docs-feedback',
    operationId: 'submitDocsFeedback',
    summary: 'Leave feedback on a documentation page',
    description:
      'Public. Feedback is given as query parameters so a plain link or image beacon can send it. ' +
      'At least one of helpful or comment is required. Rate-limited per client IP.',
    tag: 'Platform',
    auth: 'public',
    rateLimit: 'feedback',
    status: 200,
    request: {
      querystring: {
        type: 'object',
        required: ['page'],
        additionalProperties: false,
        properties: {
          page: { type: 'string', minLength: 1, maxLength: 500, description: 'The page the feedback is about' },
          helpful: { type: 'boolean', description: 'Whether the page helped' },
          comment: { type: 'string', maxLength: 2000 },
        },
      },
    },
    response: {
      type: 'object',
      required: ['id', 'created_at'],
      properties: { id: uuid, created_at: dateTime },
    },
    graphql: {
      document:
        'mutation DocsFeedback($input: DocsFeedbackInput!) { submitDocsFeedback(input: $input) { id createdAt } }',
      variables: (request) => {
        const q = request.query as { page: string; helpful?: boolean; comment?: string };
        return { input: { page: q.page, helpful: q.helpful ?? null, comment: q.comment ?? null } };
      },
      result: (data) => {
        const r = data.submitDocsFeedback as { id: string; createdAt: string };
        return { id: r.id, created_at: r.createdAt };
      },
    },
  },
];
