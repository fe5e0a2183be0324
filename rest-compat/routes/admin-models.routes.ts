import { body, path, type RestRoute } from '../route';

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
    status: 200,
    problems: { 403: 'forbidden: the caller is not an owner or admin' },
    field: 'adminModels',
  },
  {
    method: 'POST',
    path: '/admin/models',
    operationId: 'createModel',
    summary: 'Add a model to the catalog',
    description:
      'ModelCreateRequest: id (a slug: lower-case letters, digits, ".", "_", "-"), display_name, provider, family, ' +
      'credit_cost (integer >= 0, per 1,000 tokens), context_length (integer > 0), blocked (default false), ' +
      'price_per_1k_tokens (a decimal in the billing currency such as "0.005", at most 6 places; default "0.00", which no ' +
      'spending budget counts). An id ' +
      `already in the catalog is 409 conflict. Audited model.created. ${EDITORS}`,
    tag: 'Administration',
    status: 201,
    problems: { 403: 'forbidden: the caller is not a platform superadmin', 409: 'A model with this id exists' },
    field: 'createModel',
    args: { input: body() },
    bodyHints: { title: 'ModelCreateRequest' },
  },
  {
    method: 'PATCH',
    path: '/admin/models/:model_id',
    operationId: 'updateModel',
    summary: 'Change a catalog model',
    description:
      'ModelPatchRequest: any of display_name, provider, family, credit_cost, context_length, blocked, ' +
      'price_per_1k_tokens; omitted ' +
      'fields stay as they are, unknown fields are 422. blocked: true removes the model from GET /models at once ' +
      'and makes requests naming it fail with 422 model_blocked. An unknown model_id is 404 model_not_found. ' +
      `Audited model.updated. ${EDITORS}`,
    tag: 'Administration',
    status: 200,
    problems: { 403: 'forbidden: the caller is not a platform superadmin', 404: 'No such model' },
    field: 'updateModel',
    args: { id: path('model_id'), input: body() },
    bodyHints: { title: 'ModelPatchRequest' },
  },
];
