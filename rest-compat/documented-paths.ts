import type { HttpMethod } from './route';

export type SpecName = 'platform' | 'ai-modules';

/** One method and path as the specs document it, relative to the /v1 or /api/v1 prefix. */
export interface DocumentedPath {
  method: HttpMethod;
  /** Path parameters in braces, named as in the spec: /admin/users/{user_id}. */
  path: string;
  /** platform: /work/shared/spec/platform-api.md; ai-modules: ai-modules-api.md. */
  spec: SpecName;
  /** The spec's table (heading) that lists the path. */
  section: string;
}

type Row = [HttpMethod, string];

function section(spec: SpecName, name: string, rows: Row[]): DocumentedPath[] {
  return rows.map(([method, path]) => ({ method, path, spec, section: name }));
}

/**
 * Every method and path the two specs document. The SSO endpoints are written
 * once per provider (the spec's {provider} takes exactly two values). The
 * AI-modules key-management paths are "not shown" in the spec, so they are not
 * listed. test/documented-paths.test.ts checks this list against the route table.
 */
export const documentedPaths: DocumentedPath[] = [
  ...section('platform', 'Platform', [
    ['GET', '/health'],
    ['GET', '/models'],
  ]),
  ...section('platform', 'Authentication endpoints', [
    ['POST', '/auth/login'],
    ['POST', '/auth/refresh'],
    ['POST', '/auth/logout'],
    ['POST', '/auth/step-up'],
    ['GET', '/auth/google/start'],
    ['GET', '/auth/microsoft/start'],
    ['GET', '/auth/google/callback'],
    ['GET', '/auth/microsoft/callback'],
    ['POST', '/me/mfa/setup'],
    ['POST', '/me/mfa/verify'],
    ['POST', '/me/sessions/revoke-all'],
    ['GET', '/me/profile'],
  ]),
  ...section('platform', 'Administration: users', [
    ['GET', '/admin/overview'],
    ['GET', '/admin/users'],
    ['GET', '/admin/users/{user_id}'],
    ['PATCH', '/admin/users/{user_id}'],
    ['DELETE', '/admin/users/{user_id}'],
    ['POST', '/admin/users/{user_id}/suspend'],
    ['POST', '/admin/users/{user_id}/unsuspend'],
    ['POST', '/admin/users/{user_id}/reset-password'],
    ['POST', '/admin/users/{user_id}/force-logout'],
    ['POST', '/admin/users/{user_id}/disable-mfa'],
    ['POST', '/admin/users/invite'],
    ['GET', '/admin/users/{user_id}/sessions'],
    ['GET', '/admin/users/{user_id}/usage'],
  ]),
  ...section('platform', 'Administration: invitations', [
    ['POST', '/admin/invitations'],
    ['GET', '/admin/invitations'],
    ['POST', '/admin/invitations/{invitation_id}/resend'],
    ['POST', '/admin/invitations/{invitation_id}/revoke'],
    ['POST', '/admin/invitations/bulk'],
  ]),
  ...section('platform', 'Administration: companies and credits', [
    ['GET', '/admin/companies'],
    ['GET', '/admin/companies/{company_id}'],
    ['PATCH', '/admin/companies/{company_id}'],
    ['POST', '/admin/companies/{company_id}/credits/grant'],
    ['POST', '/admin/companies/{company_id}/credits/revoke'],
    ['GET', '/admin/companies/{company_id}/audit'],
  ]),
  ...section('platform', 'Administration: billing and usage', [
    ['GET', '/admin/billing/summary'],
    ['GET', '/admin/billing/overview'],
    ['GET', '/admin/billing/customers'],
    ['GET', '/admin/billing/invoices'],
    ['GET', '/admin/billing/transactions'],
    ['POST', '/admin/billing/plan/change'],
    ['POST', '/admin/billing/topup/checkout'],
    ['GET', '/admin/billing/payment-methods'],
    ['GET', '/admin/usage'],
    ['GET', '/admin/usage/export'],
  ]),
  ...section('platform', 'Administration: models, keys, connectors, security', [
    ['GET', '/admin/models'],
    ['POST', '/admin/models'],
    ['PATCH', '/admin/models/{model_id}'],
    ['GET', '/admin/api-keys'],
    ['POST', '/admin/api-keys'],
    ['DELETE', '/admin/api-keys/{key_id}'],
    ['GET', '/admin/connectors'],
    ['POST', '/admin/connectors/{name}/test'],
    ['PATCH', '/admin/connectors/{name}'],
    ['GET', '/admin/security/policy'],
    ['PUT', '/admin/security/policy'],
    ['PATCH', '/admin/security/policy'],
    ['GET', '/admin/security/sessions'],
  ]),
  ...section('platform', 'Other named endpoints', [
    ['POST', '/billing/webhook'],
    ['GET', '/billing/credits'],
    ['POST', '/billing/topup'],
    ['GET', '/docs-feedback'],
    ['POST', '/workflows/{id}/runs'],
    ['GET', '/workflows/runs/{run_id}'],
    ['POST', '/research'],
    ['GET', '/research/{id}'],
    ['POST', '/bulk/jobs'],
    ['GET', '/bulk/jobs/{id}/rows'],
    ['POST', '/workspaces/items'],
    ['POST', '/connectors'],
    ['GET', '/connectors/{id}/folders/{folder_id}/sync'],
  ]),
  ...section('ai-modules', 'Endpoints', [
    ['POST', '/chat'],
    ['POST', '/rag/upload'],
    ['POST', '/rag/query'],
    ['GET', '/rag/docs'],
    ['POST', '/studio/process'],
    ['POST', '/research/start'],
    ['GET', '/research/status/{job_id}'],
    ['POST', '/agent/run'],
    ['POST', '/bulk/submit'],
    ['GET', '/bulk/download/{job_id}'],
    ['GET', '/apikeys/verify'],
    ['GET', '/usage'],
  ]),
];
