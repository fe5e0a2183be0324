import { body, path, type RestRoute } from '../route';
import { pageArgs } from '../pagination';
import { actingCompany } from '../schemas';
import { GRANT_REASON_MAX, MAX_BALANCE, MAX_CREDITS_PER_WRITE, TRANSACTIONS_PER_PAGE } from '../../src/domains/billing';

const company = { companyId: path('company_id') };
const SUPERADMIN_ONLY =
  'Platform superadmins only (credits are money): anyone else gets 403, an owner included. An unknown company is 404.';
const IDEMPOTENT = 'Idempotent per request: a retry with the same X-Request-Id header changes nothing and answers the balance; the same id with other credits or another reason is 409.';

/** The credit balance, the ledger, grants and revokes, and spending budgets. */
export const creditRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/billing/credits',
    operationId: 'getCredits',
    summary: 'Credit balance',
    description:
      "The caller's company balance (any member or API key): available credits split into monthly (this period's plan " +
      'credits, spent first, expiring at period_end), granted and purchased (never expire), plus the credits held by running ' +
      'operations, the current period and the plan. A superadmin may name another company with company_id.',
    tag: 'Billing',
    status: 200,
    problems: { 404: 'No such company (superadmin)' },
    field: 'credits',
    args: { companyId: actingCompany() },
  },
  {
    method: 'POST',
    path: '/admin/companies/:company_id/credits/grant',
    operationId: 'grantCredits',
    summary: 'Grant credits',
    description:
      `CreditGrantRequest: credits (1 to ${MAX_CREDITS_PER_WRITE}) and reason (1 to ${GRANT_REASON_MAX} characters). Granted ` +
      `credits never expire and are spent after the monthly ones. A company holds at most ${MAX_BALANCE} credits in all ` +
      `(monthly + granted + purchased + held, the GraphQL Int maximum): a grant past it is 422 at credits and writes nothing. ` +
      `${SUPERADMIN_ONLY} ${IDEMPOTENT} Audited credits.granted.`,
    tag: 'Billing',
    status: 200,
    problems: {
      403: 'forbidden: the caller is not a platform superadmin',
      404: 'No such company',
      409: 'The X-Request-Id was used for another grant',
      422: `validation_error: the body does not match its schema, or the grant would take the balance past ${MAX_BALANCE} credits`,
    },
    field: 'grantCredits',
    args: { ...company, input: body() },
    bodyHints: { title: 'CreditGrantRequest' },
  },
  {
    method: 'POST',
    path: '/admin/companies/:company_id/credits/revoke',
    operationId: 'revokeCredits',
    summary: 'Revoke credits',
    description:
      'CreditGrantRequest: credits and reason. Takes granted credits first, then monthly, then purchased. A revoke never ' +
      `takes the balance below zero: more than the available balance is 422 at body.credits. ${SUPERADMIN_ONLY} ${IDEMPOTENT} ` +
      'Audited credits.revoked.',
    tag: 'Billing',
    status: 200,
    problems: { 403: 'forbidden: the caller is not a platform superadmin', 404: 'No such company', 409: 'The X-Request-Id was used for another revoke' },
    field: 'revokeCredits',
    args: { ...company, input: body() },
    bodyHints: { title: 'CreditGrantRequest' },
  },
  {
    method: 'GET',
    path: '/admin/billing/transactions',
    operationId: 'listCreditTransactions',
    summary: 'Credit ledger',
    description:
      `The company's ledger entries, newest first, paged (per_page defaults to ${TRANSACTIONS_PER_PAGE}; a Link header gives ` +
      'first, prev, next and last). Each entry has its kind (allocation, expiry, grant, revoke, topup, hold, commit, release), ' +
      'the credits it is about and how it moved each bucket. Owners, admins and API keys; a member gets 403. A superadmin may ' +
      'name another company with company_id.',
    tag: 'Billing',
    status: 200,
    problems: { 403: 'forbidden: the caller is not an owner or admin', 404: 'No such company (superadmin)' },
    field: 'creditTransactions',
    args: { companyId: actingCompany(), ...pageArgs() },
    paginated: true,
  },
  {
    method: 'GET',
    path: '/admin/companies/:company_id/budget',
    operationId: 'getSpendingBudget',
    summary: 'Spending budget',
    description:
      "The company's spending budget per period in the billing currency (null: none) and the currency cost of this period's " +
      'usage. Once the spend reaches the budget, credit-costing operations answer 402 budget_exhausted until the next period. ' +
      "Owners, admins and API keys of the company; another company is 404 unless the caller is a superadmin.",
    tag: 'Billing',
    status: 200,
    problems: { 403: 'forbidden: the caller is not an owner or admin', 404: 'No such company' },
    field: 'spendingBudget',
    args: company,
    extension: true,
  },
  {
    method: 'PUT',
    path: '/admin/companies/:company_id/budget',
    operationId: 'setSpendingBudget',
    summary: 'Set the spending budget',
    description:
      'Body: budget, a decimal amount in the billing currency ("250.00"), or null to remove it. ' +
      `${SUPERADMIN_ONLY} Audited billing.budget_changed.`,
    tag: 'Billing',
    status: 200,
    problems: { 403: 'forbidden: the caller is not a platform superadmin', 404: 'No such company' },
    field: 'setSpendingBudget',
    args: { ...company, input: body() },
    extension: true,
  },
];
