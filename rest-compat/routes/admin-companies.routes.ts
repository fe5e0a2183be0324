import { body, path, query, type RestRoute } from '../route';
import { pageArgs } from '../pagination';
import { actingCompany } from '../schemas';

const company = { id: path('company_id') };
const ACCESS =
  'Owners and admins of the company and its API keys; a member gets 403. Another company answers 404 unless the ' +
  'caller is a platform superadmin (create-owner --superadmin), who may act on every company.';

/** Company administration and the dashboard overview. */
export const adminCompanyRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/admin/overview',
    operationId: 'getAdminOverview',
    summary: "Counts of the caller's company",
    description:
      "The administration dashboard of the caller's company: users by status and role, pending (unexpired) " +
      'invitations, active sessions, active API keys, and the last 10 security events (audited actions starting ' +
      'with auth., mfa., session. or api_key.), newest first. Owners, admins and the company API keys; a member gets 403. ' +
      'A superadmin may name any company with company_id; an unknown one is 404, and so is another company named by anyone else.',
    tag: 'Administration',
    status: 200,
    problems: { 403: 'forbidden: the caller is not an owner or admin of the company', 404: 'No such company, or another company named by anyone but a superadmin' },
    field: 'adminOverview',
    args: { companyId: actingCompany() },
  },
  {
    method: 'GET',
    path: '/admin/companies',
    operationId: 'listCompanies',
    summary: 'Companies',
    description:
      'Companies by name (case-insensitively), paged (per_page defaults to 20; a Link header gives first, prev, next and last). q: the ' +
      'name contains it (case-insensitive). Owners, admins and API keys see only their own company; a platform ' +
      'superadmin sees every company. A member gets 403.',
    tag: 'Administration',
    status: 200,
    problems: { 403: 'forbidden: the caller is not an owner or admin' },
    field: 'adminCompanies',
    args: { q: query('q', { description: 'Name contains' }), ...pageArgs() },
    paginated: true,
  },
  {
    method: 'GET',
    path: '/admin/companies/:company_id',
    operationId: 'getCompany',
    summary: 'One company',
    description: ACCESS,
    tag: 'Administration',
    status: 200,
    problems: { 403: 'forbidden: the caller is not an owner or admin', 404: 'No such company (or not the caller\'s)' },
    field: 'adminCompany',
    args: company,
  },
  {
    method: 'PATCH',
    path: '/admin/companies/:company_id',
    operationId: 'updateCompany',
    summary: 'Change a company',
    description:
      'CompanyPatchRequest: name (1 to 200 characters; another company\'s name, ignoring case and surrounding spaces, is 409 conflict, ' +
      'with duplicate_of for a superadmin) and plan_id (an existing plan). Only a platform superadmin ' +
      'may set plan_id (403 otherwise; company admins change plans through billing); an unknown plan is 422 at ' +
      `body.plan_id. Omitted fields stay as they are; unknown fields are 422. Audited company.updated. ${ACCESS}`,
    tag: 'Administration',
    status: 200,
    problems: {
      403: 'forbidden: the caller is not an owner or admin, or sets plan_id without being a superadmin',
      404: 'No such company (or not the caller\'s)',
      409: 'conflict: another company has this name',
    },
    field: 'updateCompany',
    args: { ...company, input: body() },
    bodyHints: { title: 'CompanyPatchRequest' },
  },
  {
    method: 'GET',
    path: '/admin/companies/:company_id/audit',
    operationId: 'listCompanyAudit',
    summary: "A company's audit log",
    description:
      'Audited actions of the company, newest first, paged (per_page defaults to 50; a Link header gives first, ' +
      'prev, next and last). action filters by the exact action (e.g. api_key.revoked); actor by the actor id ' +
      `(user or API key id) or label (email or key name at the time). ${ACCESS}`,
    tag: 'Administration',
    status: 200,
    problems: { 403: 'forbidden: the caller is not an owner or admin', 404: 'No such company (or not the caller\'s)' },
    field: 'companyAuditLog',
    args: {
      companyId: path('company_id'),
      ...pageArgs(),
      action: query('action', { description: 'Exact action' }),
      actor: query('actor', { description: 'Actor id or label' }),
    },
    paginated: true,
  },
];
