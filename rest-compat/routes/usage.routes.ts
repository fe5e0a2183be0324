import { guardCell } from '../../src/spreadsheet-cell';
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { query, type RestRoute } from '../route';
import { actingCompany } from '../schemas';
import { formatMicros, USAGE_DAYS_DEFAULT, USAGE_DAYS_MAX, usageGroups, type UsageRow } from '../../src/domains/billing';

const ACCESS = "Owners, admins and API keys of the company; a member gets 403. A superadmin may name another company with company_id.";
const QUERY =
  `group_by: ${usageGroups.join(', ')} (default model); days: 1 to ${USAGE_DAYS_MAX} (default ${USAGE_DAYS_DEFAULT}); anything else is 422 ` +
  'naming query.group_by or query.days.';

const usageQuery = {
  groupBy: query('group_by', { enum: usageGroups, description: `How to group: ${usageGroups.join(', ')}` }),
  days: query('days', { description: `The last days, 1 to ${USAGE_DAYS_MAX}` }),
  companyId: actingCompany(),
};

/** One CSV cell (RFC 4180), safe to open in a spreadsheet (`guardCell`). */
export function csvCell(value: string | number | null): string {
  const text = value === null ? '' : typeof value === 'string' ? guardCell(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

const csvLine = (cells: (string | number | null)[]) => `${cells.map(csvCell).join(',')}\r\n`;

async function exportUsage(request: FastifyRequest, reply: FastifyReply) {
  const q = request.query as { group_by?: string; days?: number; company_id?: string };
  const { usage } = request.server.domains.billing;
  const { models } = request.server.domains.catalog;
  const { accounts } = request.server.domains.identity;
  // Checked before the first byte: a refusal is a problem document, not a broken download.
  const { scope, chunks } = usage.exportRows(request.principal, { groupBy: q.group_by, days: q.days, companyId: q.company_id });
  const label = async (rows: UsageRow[]): Promise<(string | null)[]> => {
    if (scope.groupBy === 'model') return rows.map((r) => (r.key ? (models.anyModel(r.key)?.displayName ?? null) : null));
    if (scope.groupBy !== 'user') return rows.map(() => null);
    const users = await accounts.usersByIds(rows.map((r) => r.key ?? ''));
    return users.map((u) => u?.email ?? null);
  };
  async function* lines() {
    yield csvLine([scope.groupBy, 'label', 'requests', 'tokens', 'credits', `cost_${scope.currency}`]);
    const totals = { requests: 0, tokens: 0, credits: 0, costMicros: 0 };
    for (const rows of chunks()) {
      const labels = await label(rows);
      let text = '';
      rows.forEach((r, i) => {
        totals.requests += r.requests;
        totals.tokens += r.tokens;
        totals.credits += r.credits;
        totals.costMicros += r.costMicros;
        text += csvLine([r.key, labels[i] ?? null, r.requests, r.tokens, r.credits, r.cost]);
      });
      yield text;
    }
    yield csvLine(['total', null, totals.requests, totals.tokens, totals.credits, formatMicros(totals.costMicros)]);
  }
  return reply
    .header('content-type', 'text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="usage-${scope.groupBy}-${scope.days}d.csv"`)
    .header('cache-control', 'no-store')
    .send(Readable.from(lines(), { objectMode: false }));
}

/** Usage reports: grouped totals and their CSV export. */
export const usageRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/admin/usage',
    operationId: 'getUsage',
    summary: 'Usage report',
    description:
      `The company's metered usage over the last days, grouped, with totals: per group the key, a label (model display name, ` +
      `user email), requests, tokens, credits and the currency cost at the models' prices. ${QUERY} ${ACCESS}`,
    tag: 'Billing',
    status: 200,
    problems: { 403: 'forbidden: not an owner or admin', 404: 'No such company (superadmin)' },
    field: 'usageReport',
    args: usageQuery,
  },
  {
    method: 'GET',
    path: '/admin/usage/export',
    operationId: 'exportUsage',
    summary: 'Usage report as CSV',
    description:
      `The same report as a CSV download (text/csv, UTF-8, RFC 4180): a header line, one line per group, then a total line. ` +
      'It is streamed as it is read. Cells that a spreadsheet would take for a formula (starting with =, +, -, @, a tab or a ' +
      `carriage return) start with an apostrophe. ${QUERY} ${ACCESS}`,
    tag: 'Billing',
    auth: 'required',
    status: 200,
    problems: { 403: 'forbidden: not an owner or admin', 404: 'No such company (superadmin)', 422: 'A bad group_by or days' },
    request: {
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: {
          group_by: { type: 'string', enum: [...usageGroups], default: 'model' },
          days: { type: 'integer', minimum: 1, maximum: USAGE_DAYS_MAX, default: USAGE_DAYS_DEFAULT },
          company_id: { type: 'string', format: 'uuid' },
        },
      },
    },
    response: { type: 'string', description: 'text/csv' },
    content: { 'text/csv': { type: 'string', description: 'RFC 4180, UTF-8: a header line, one line per group, a total line' } },
    raw: exportUsage,
  },
];
