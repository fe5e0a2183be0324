import type { RestRoute } from '../route';
import { dateTime } from '../schemas';
import { MODEL_ID_PATTERN } from '../../src/domains/catalog';

interface AdminModelData {
  id: string;
  displayName: string;
  provider: string;
  family: string;
  creditCost: number;
  contextLength: number;
  blocked: boolean;
  createdAt: string;
}

const MODEL_FIELDS = 'id displayName provider family creditCost contextLength blocked createdAt';

const adminModel = {
  type: 'object',
  required: ['id', 'display_name', 'provider', 'family', 'credit_cost', 'context_length', 'blocked', 'created_at'],
  properties: {
    id: { type: 'string' },
    display_name: { type: 'string' },
    provider: { type: 'string' },
    family: { type: 'string' },
    credit_cost: { type: 'integer', description: 'Credits per 1,000 tokens' },
    context_length: { type: 'integer', description: 'Context window in tokens' },
    blocked: { type: 'boolean', description: 'Hidden from GET /models and refused with 422 model_blocked' },
    created_at: dateTime,
  },
};

const modelBody = (m: AdminModelData) => ({
  id: m.id,
  display_name: m.displayName,
  provider: m.provider,
  family: m.family,
  credit_cost: m.creditCost,
  context_length: m.contextLength,
  blocked: m.blocked,
  created_at: m.createdAt,
});

const editable = {
  display_name: { type: 'string', minLength: 1, maxLength: 200 },
  provider: { type: 'string', minLength: 1, maxLength: 64 },
  family: { type: 'string', minLength: 1, maxLength: 64 },
  credit_cost: { type: 'integer', minimum: 0, description: 'Credits per 1,000 tokens' },
  context_length: { type: 'integer', minimum: 1, description: 'Context window in tokens' },
  blocked: { type: 'boolean' },
};

type ModelRequest = Partial<Record<keyof typeof editable, unknown>>;
const modelInput = (b: ModelRequest) => ({
  displayName: b.display_name ?? null,
  provider: b.provider ?? null,
  family: b.family ?? null,
  creditCost: b.credit_cost ?? null,
  contextLength: b.context_length ?? null,
  blocked: b.blocked ?? null,
});

const EDITORS =
  'The catalog is platform-wide: only a platform superadmin (create-owner --superadmin) may change it; owners, ' +
  'admins and API keys get 403.';

/** The platform-wide model catalog. */
export const adminModelRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/admin/models',
    operationId: 'listAdminModels',
    summary: 'The whole model catalog',
    description:
      'Every model of the catalog, blocked ones included, ordered by provider and display name (GET /models lists ' +
      'the models callers may use). Owners, admins, API keys and superadmins; a member gets 403.',
    tag: 'Administration',
    auth: 'required',
    status: 200,
    response: { type: 'array', items: adminModel },
    problems: { 403: 'The caller is not an owner or admin' },
    graphql: {
      document: `query AdminModels { adminModels { ${MODEL_FIELDS} } }`,
      result: (data) => (data.adminModels as AdminModelData[]).map(modelBody),
    },
  },
  {
    method: 'POST',
    path: '/admin/models',
    operationId: 'createModel',
    summary: 'Add a model to the catalog',
    description:
      'ModelCreateRequest: id (a slug: lower-case letters, digits, ".", "_", "-"), display_name, provider, family, ' +
      'credit_cost (integer >= 0, per 1,000 tokens), context_length (integer > 0), blocked (default false). An id ' +
      `already in the catalog is 409 conflict. Audited model.created. ${EDITORS}`,
    tag: 'Administration',
    auth: 'required',
    status: 201,
    request: {
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'display_name', 'provider', 'family', 'credit_cost', 'context_length'],
        properties: { id: { type: 'string', pattern: MODEL_ID_PATTERN }, ...editable },
      },
    },
    response: adminModel,
    problems: { 403: 'The caller is not a platform superadmin', 409: 'A model with this id exists' },
    graphql: {
      document: `mutation CreateModel($input: ModelCreateInput!) { createModel(input: $input) { ${MODEL_FIELDS} } }`,
      variables: (request) => {
        const body = request.body as ModelRequest & { id: string };
        return { input: { id: body.id, ...modelInput(body) } };
      },
      result: (data) => modelBody(data.createModel as AdminModelData),
    },
  },
  {
    method: 'PATCH',
    path: '/admin/models/:model_id',
    operationId: 'updateModel',
    summary: 'Change a catalog model',
    description:
      'ModelPatchRequest: any of display_name, provider, family, credit_cost, context_length, blocked; omitted ' +
      'fields stay as they are, unknown fields are 422. blocked: true removes the model from GET /models at once ' +
      'and makes requests naming it fail with 422 model_blocked. An unknown model_id is 404 model_not_found. ' +
      `Audited model.updated. ${EDITORS}`,
    tag: 'Administration',
    auth: 'required',
    status: 200,
    request: {
      params: { type: 'object', required: ['model_id'], properties: { model_id: { type: 'string', minLength: 1, maxLength: 100 } } },
      body: { type: 'object', additionalProperties: false, properties: editable },
    },
    response: adminModel,
    problems: { 403: 'The caller is not a platform superadmin', 404: 'No such model' },
    graphql: {
      document: `mutation UpdateModel($id: ID!, $input: ModelPatchInput!) { updateModel(id: $id, input: $input) { ${MODEL_FIELDS} } }`,
      variables: (request) => ({
        id: (request.params as { model_id: string }).model_id,
        input: modelInput(request.body as ModelRequest),
      }),
      result: (data) => modelBody(data.updateModel as AdminModelData),
    },
  },
];
