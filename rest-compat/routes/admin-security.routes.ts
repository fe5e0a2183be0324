import { body, type RestRoute } from '../route';
import { actingCompany } from '../schemas';
import { pageArgs } from '../pagination';
import { COMPANY_SESSIONS_PER_PAGE } from '../../src/domains/identity';

const WHO =
  'Owners and admins of the company and its API keys; a member gets 403. A superadmin may name any company with company_id; ' +
  'another company named by anyone else is 404, as an unknown one is.';

const PROBLEMS = { 403: 'forbidden: the caller is not an owner or admin of the company', 404: 'No such company, or another company named by anyone but a superadmin' };

function updateRoute(method: 'PUT' | 'PATCH'): RestRoute {
  return {
    method,
    path: '/admin/security/policy',
    operationId: method === 'PUT' ? 'putSecurityPolicy' : 'patchSecurityPolicy',
    summary: method === 'PUT' ? 'Change the security policy' : 'Change the security policy (alias of PUT)',
    description:
      'Sets the fields given in the body; fields left out keep their value (PUT and PATCH behave alike). ' +
      'Invalid fields answer 422 with their loc (a list entry by its index). The new policy applies to ' +
      `the next request of every user and key of the company. Audited security_policy.updated with the changes. ${WHO}`,
    tag: 'Administration',
    status: 200,
    problems: PROBLEMS,
    field: 'updateSecurityPolicy',
    args: { input: body(), companyId: actingCompany() },
    bodyHints: {
      title: 'PolicyPatchRequest',
      description: 'The fields to change; fields left out keep their value. Unknown fields are refused (422).',
    },
  };
}

/** A company's security policy and its active sessions. */
export const adminSecurityRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/admin/security/policy',
    operationId: 'getSecurityPolicy',
    summary: 'The company security policy',
    description: `The policy of the caller's company; the defaults until it is first changed (updated_at null). ${WHO}`,
    tag: 'Administration',
    status: 200,
    problems: PROBLEMS,
    field: 'securityPolicy',
    args: { companyId: actingCompany() },
  },
  updateRoute('PUT'),
  updateRoute('PATCH'),
  {
    method: 'GET',
    path: '/admin/security/sessions',
    operationId: 'listCompanySessions',
    summary: "The company's active sessions",
    description:
      'Every session of a user of the company that is neither revoked, expired nor idle past the policy, newest first, ' +
      `paged (per_page defaults to ${COMPANY_SESSIONS_PER_PAGE}; a Link header gives first, prev, next and last). ${WHO}`,
    tag: 'Administration',
    status: 200,
    problems: PROBLEMS,
    field: 'companySessions',
    args: { ...pageArgs(), companyId: actingCompany() },
    paginated: true,
  },
];
