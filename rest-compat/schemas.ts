import { PROBLEM_DETAILS_SINCE } from '../src/version';
import { query, type JsonSchema } from './route';
import { moduleScopes } from '../src/auth/principal';

/** Shared JSON-schema fragments of the REST surface (also the OpenAPI components). */
export const nullable = (type: string, extra: JsonSchema = {}): JsonSchema => ({ type: [type, 'null'], ...extra });
export const dateTime: JsonSchema = { type: 'string', format: 'date-time' };
export const uuid: JsonSchema = { type: 'string', format: 'uuid' };

/** The 504 of the routes that call a model: what AI_TIMEOUT_SECONDS bounds (src/domains/ai/engine.ts). */
export const PROVIDER_TIMEOUT = 'ai_provider_timeout: a provider call, its retries included, did not finish within AI_TIMEOUT_SECONDS; nothing is spent';

/** A created key's answer: the key's listing with the plaintext beside it (`{ ...api_key, key }`), not nested. */
export const createdKeyAnswer = {
  body: ({ api_key: apiKey, key }: { api_key: Record<string, unknown>; key: string }) => ({ ...apiKey, key }),
  schema: (derived: JsonSchema): JsonSchema => {
    const properties = derived.properties as Record<string, JsonSchema>;
    const listed = properties.api_key!;
    return {
      ...listed,
      required: [...(listed.required as string[]), 'key'],
      properties: { ...(listed.properties as Record<string, JsonSchema>), key: properties.key },
    };
  },
};

/**
 * An answer whose one member has another name than the derived body's,
 * where two doors show one type (the AI-modules API's `job_id` for `id`,
 * the platform API's `content` for a report): the body and its schema alike.
 */
export function renamedMember(from: string, to: string) {
  return {
    body: (derived: Record<string, unknown>) => {
      const { [from]: moved, ...rest } = derived;
      return { [to]: moved, ...rest };
    },
    schema: (derived: JsonSchema): JsonSchema => {
      const s = derived as { properties?: Record<string, JsonSchema>; required?: string[] };
      const properties = Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k === from ? to : k, v]));
      return { ...derived, properties, required: (s.required ?? []).map((k) => (k === from ? to : k)) } as JsonSchema;
    },
  };
}

/** The AI-modules API names a job's id `job_id` (ai-modules-api.md). */
export const jobIdAnswer = renamedMember('id', 'job_id');

/** An answer's change made to each item of a page envelope (`{ items, page, per_page, total }`). */
export function eachItem(answer: ReturnType<typeof renamedMember>) {
  return {
    body: (page: { items: Record<string, unknown>[] }) => ({ ...page, items: page.items.map(answer.body) }),
    schema: (derived: JsonSchema): JsonSchema => {
      const properties = derived.properties as Record<string, JsonSchema>;
      const items = properties.items!;
      return { ...derived, properties: { ...properties, items: { ...items, items: answer.schema(items.items as JsonSchema) } } };
    },
  };
}

/** A page of the AI-modules API's jobs: each named by `job_id`, as its start, status and cancel answers name it. */
export const jobIdPage = eachItem(jobIdAnswer);

/** `?company_id=` of the routes a superadmin may point at another company (the field's `companyId`, a UUID by its own hint). */
export const actingCompany = () => query('company_id', { description: "Superadmins only: the company to act on (default: the caller's own)" });

export const problemSchema: JsonSchema = {
  type: 'object',
  description: `RFC 9457 problem details (application/problem+json): every error answer, unless the client pins X-Service-API-Version to a version before ${PROBLEM_DETAILS_SINCE}`,
  required: ['type', 'title', 'status', 'detail', 'instance', 'request_id'],
  properties: {
    type: { type: 'string', format: 'uri', description: '{docs_url}/errors/<code>' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    instance: { type: 'string', description: 'The request path' },
    request_id: { type: 'string' },
    code: { type: 'string', description: 'The error code, the last segment of type' },
  },
};

export const validationErrorSchema: JsonSchema = {
  type: 'object',
  required: ['loc', 'msg', 'type'],
  properties: {
    loc: { type: 'array', items: { type: ['string', 'integer'] } },
    msg: { type: 'string' },
    type: { type: 'string' },
  },
};

export const httpValidationErrorSchema: JsonSchema = {
  allOf: [{ $ref: '#/components/schemas/ProblemDetail' }],
  type: 'object',
  properties: { errors: { type: 'array', items: { $ref: '#/components/schemas/ValidationError' } } },
};

/**
 * A 402's problem: the credit members of insufficient_credits (CREDIT_EXHAUSTED on the AI-modules API), or the budget
 * members of budget_exhausted (BUDGET_EXHAUSTED). Declared once for every 402 (rest-compat/openapi.ts).
 */
export const paymentRequiredSchema: JsonSchema = {
  allOf: [{ $ref: '#/components/schemas/ProblemDetail' }],
  type: 'object',
  description: 'insufficient_credits carries required and balance; budget_exhausted carries budget, spend and currency',
  properties: {
    required: { type: 'integer', minimum: 0, description: 'insufficient_credits: the credits the operation needs' },
    balance: { type: 'integer', minimum: 0, description: 'insufficient_credits: the credits available' },
    budget: { type: 'string', pattern: '^\\d{1,9}(\\.\\d{1,6})?$', description: "budget_exhausted: the period's spending budget, decimal" },
    spend: { type: 'string', pattern: '^\\d{1,9}(\\.\\d{1,6})?$', description: 'budget_exhausted: the spend of the period so far, decimal' },
    currency: { type: 'string', description: 'budget_exhausted: the currency of budget and spend (ISO 4217, lower-case)' },
  },
};

/**
 * A 403 that may be insufficient_scope, which names the scope the AI-modules key lacks (src/auth/policy.ts). Declared for
 * each 403 whose description names insufficient_scope (rest-compat/openapi.ts).
 */
export const scopeProblemSchema: JsonSchema = {
  allOf: [{ $ref: '#/components/schemas/ProblemDetail' }],
  type: 'object',
  description: 'insufficient_scope carries required_scope',
  properties: {
    required_scope: { type: 'string', enum: [...moduleScopes], description: 'insufficient_scope: the scope the path needs, which the key lacks' },
  },
};

/** A 502 that may be ai_provider_error, which names the provider's HTTP status when it answered one (src/domains/ai/engine.ts). */
export const providerProblemSchema: JsonSchema = {
  allOf: [{ $ref: '#/components/schemas/ProblemDetail' }],
  type: 'object',
  description: 'ai_provider_error carries provider_status when the provider answered with an HTTP error',
  properties: {
    provider_status: { type: 'integer', minimum: 100, maximum: 599, description: 'ai_provider_error: the HTTP status the AI provider answered, after retries' },
  },
};

/** The error body of the versions before RFC 9457 (src/host/problem.ts), declared beside the problem on every error answer. */
export const legacyErrorSchema: JsonSchema = {
  type: 'object',
  description:
    `The error body (application/json) of a client that pins X-Service-API-Version to a version before ${PROBLEM_DETAILS_SINCE} ` +
    '(2026.04.21, 2026.03.30), in place of the problem details',
  required: ['detail', 'code'],
  properties: {
    detail: {
      oneOf: [
        { type: 'string', description: 'What went wrong' },
        { type: 'array', items: { $ref: '#/components/schemas/ValidationError' }, description: 'A validation_error: each invalid field' },
      ],
    },
    code: { type: 'string', description: 'The error code, as a problem\'s code (mfa_required, invalid_credentials, …)' },
  },
};
