import type { RestRoute } from '../route';
import { pageEnvelope, pageQuery, toPageBody } from '../pagination';
import { dateTime, nullable, uuid } from '../schemas';
import { COMPANIES_PER_PAGE, COMPANY_AUDIT_PER_PAGE } from '../../src/domains/identity';

interface CompanyData {
  id: string;
  name: string;
  planId: string;
  createdAt: string;
}

interface AuditData {
  id: string;
  action: string;
  actorType: string;
  actorId: string | null;
  actorLabel: string | null;
  targetType: string | null;
  targetId: string | null;
  ip: string | null;
  requestId: string | null;
  data: Record<string, unknown> | null;
  createdAt: string;
}

interface OverviewData {
  companyId: string;
  users: {
    total: number;
    byStatus: { active: number; suspended: number };
    byRole: { owner: number; admin: number; member: number };
  };
  pendingInvitations: number;
  activeSessions: number;
  activeApiKeys: number;
  recentSecurityEvents: AuditData[];
}

type Page<T> = { items: T[]; page: number; perPage: number; total: number };

const COMPANY_FIELDS = 'id name planId createdAt';
const AUDIT_FIELDS = 'id action actorType actorId actorLabel targetType targetId ip requestId data createdAt';

const company = {
  type: 'object',
  required: ['id', 'name', 'plan_id', 'created_at'],
  properties: { id: uuid, name: { type: 'string' }, plan_id: { type: 'string' }, created_at: dateTime },
};

const companyBody = (c: CompanyData) => ({ id: c.id, name: c.name, plan_id: c.planId, created_at: c.createdAt });

const auditEvent = {
  type: 'object',
  required: ['id', 'action', 'actor_type', 'actor_id', 'actor_label', 'target_type', 'target_id', 'created_at'],
  properties: {
    id: uuid,
    action: { type: 'string', description: 'What happened, e.g. auth.login or api_key.created' },
    actor_type: { type: 'string', enum: ['user', 'api_key', 'system', 'anonymous'] },
    actor_id: nullable('string', { description: 'User or API key id' }),
    actor_label: nullable('string', { description: 'Email or key name at the time' }),
    target_type: nullable('string'),
    target_id: nullable('string'),
    ip: nullable('string'),
    request_id: nullable('string'),
    data: { type: ['object', 'null'], additionalProperties: true },
    created_at: dateTime,
  },
};

export const auditEventBody = (e: AuditData) => ({
  id: e.id,
  action: e.action,
  actor_type: e.actorType,
  actor_id: e.actorId,
  actor_label: e.actorLabel,
  target_type: e.targetType,
  target_id: e.targetId,
  ip: e.ip,
  request_id: e.requestId,
  data: e.data,
  created_at: e.createdAt,
});

const companyIdParams = { type: 'object', required: ['company_id'], properties: { company_id: uuid } };
const ACCESS =
  'Owners and admins of the company and its API keys; a member gets 403. Another company answers 404 unless the ' +
  'caller is a platform superadmin (create-owner --superadmin), who may act on every company.';
const count = { type: 'integer', minimum: 0 };

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
      'with auth., mfa., session. or api_key.), newest first. Owners, admins and the company API keys; a member gets 403.',
    tag: 'Administration',
    auth: 'required',
    status: 200,
    response: {
      type: 'object',
      required: ['company_id', 'users', 'pending_invitations', 'active_sessions', 'active_api_keys', 'recent_security_events'],
      properties: {
        company_id: uuid,
        users: {
          type: 'object',
          required: ['total', 'by_status', 'by_role'],
          properties: {
            total: count,
            by_status: { type: 'object', required: ['active', 'suspended'], properties: { active: count, suspended: count } },
            by_role: {
              type: 'object',
              required: ['owner', 'admin', 'member'],
              properties: { owner: count, admin: count, member: count },
            },
          },
        },
        pending_invitations: count,
        active_sessions: count,
        active_api_keys: count,
        recent_security_events: { type: 'array', items: auditEvent },
      },
    },
    problems: { 403: 'The caller is not an owner or admin of the company' },
    graphql: {
      document: `query AdminOverview { adminOverview {
        companyId users { total byStatus { active suspended } byRole { owner admin member } }
        pendingInvitations activeSessions activeApiKeys recentSecurityEvents { ${AUDIT_FIELDS} }
      } }`,
      result: (data) => {
        const o = data.adminOverview as OverviewData;
        return {
          company_id: o.companyId,
          users: { total: o.users.total, by_status: o.users.byStatus, by_role: o.users.byRole },
          pending_invitations: o.pendingInvitations,
          active_sessions: o.activeSessions,
          active_api_keys: o.activeApiKeys,
          recent_security_events: o.recentSecurityEvents.map(auditEventBody),
        };
      },
    },
  },
  {
    method: 'GET',
    path: '/admin/companies',
    operationId: 'listCompanies',
    summary: 'Companies',
    description:
      'Companies by name, paged (per_page defaults to 20; a Link header gives first, prev, next and last). q: the ' +
      'name contains it (case-insensitive). Owners, admins and API keys see only their own company; a platform ' +
      'superadmin sees every company. A member gets 403.',
    tag: 'Administration',
    paginated: true,
    auth: 'required',
    status: 200,
    request: {
      querystring: (() => {
        const q = pageQuery(COMPANIES_PER_PAGE) as { properties: Record<string, unknown> };
        return { ...q, properties: { q: { type: 'string', maxLength: 200, description: 'Name contains' }, ...q.properties } };
      })(),
    },
    response: pageEnvelope(company),
    problems: { 403: 'The caller is not an owner or admin' },
    graphql: {
      document: `query AdminCompanies($q: String, $page: Int!, $perPage: Int!) {
        adminCompanies(q: $q, page: $page, perPage: $perPage) { items { ${COMPANY_FIELDS} } page perPage total } }`,
      variables: (request) => {
        const q = request.query as { q?: string; page: number; per_page: number };
        return { q: q.q ?? null, page: q.page, perPage: q.per_page };
      },
      result: (data) => toPageBody(data.adminCompanies as Page<CompanyData>, companyBody),
    },
  },
  {
    method: 'GET',
    path: '/admin/companies/:company_id',
    operationId: 'getCompany',
    summary: 'One company',
    description: ACCESS,
    tag: 'Administration',
    auth: 'required',
    status: 200,
    request: { params: companyIdParams },
    response: company,
    problems: { 403: 'The caller is not an owner or admin', 404: 'No such company (or not the caller\'s)' },
    graphql: {
      document: `query AdminCompany($id: ID!) { adminCompany(id: $id) { ${COMPANY_FIELDS} } }`,
      variables: (request) => ({ id: (request.params as { company_id: string }).company_id }),
      result: (data) => companyBody(data.adminCompany as CompanyData),
    },
  },
  {
    method: 'PATCH',
    path: '/admin/companies/:company_id',
    operationId: 'updateCompany',
    summary: 'Change a company',
    description:
      'CompanyPatchRequest: name (1 to 200 characters) and plan_id (an existing plan). Only a platform superadmin ' +
      'may set plan_id (403 otherwise; company admins change plans through billing); an unknown plan is 422 at ' +
      `body.plan_id. Omitted fields stay as they are; unknown fields are 422. Audited company.updated. ${ACCESS}`,
    tag: 'Administration',
    auth: 'required',
    status: 200,
    request: {
      params: companyIdParams,
      body: {
        type: 'object',
        additionalProperties: false,
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 200 },
          plan_id: { type: 'string', minLength: 1, maxLength: 64, description: 'Superadmins only' },
        },
      },
    },
    response: company,
    problems: {
      403: 'The caller is not an owner or admin, or sets plan_id without being a superadmin',
      404: 'No such company (or not the caller\'s)',
    },
    graphql: {
      document: `mutation UpdateCompany($id: ID!, $input: CompanyPatchInput!) { updateCompany(id: $id, input: $input) { ${COMPANY_FIELDS} } }`,
      variables: (request) => {
        const body = request.body as { name?: string; plan_id?: string };
        return {
          id: (request.params as { company_id: string }).company_id,
          input: { name: body.name ?? null, planId: body.plan_id ?? null },
        };
      },
      result: (data) => companyBody(data.updateCompany as CompanyData),
    },
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
    paginated: true,
    auth: 'required',
    status: 200,
    request: {
      params: companyIdParams,
      querystring: (() => {
        const q = pageQuery(COMPANY_AUDIT_PER_PAGE) as { properties: Record<string, unknown> };
        return {
          ...q,
          properties: {
            ...q.properties,
            action: { type: 'string', minLength: 1, maxLength: 64, description: 'Exact action' },
            actor: { type: 'string', minLength: 1, maxLength: 320, description: 'Actor id or label' },
          },
        };
      })(),
    },
    response: pageEnvelope(auditEvent),
    problems: { 403: 'The caller is not an owner or admin', 404: 'No such company (or not the caller\'s)' },
    graphql: {
      document: `query CompanyAudit($companyId: ID!, $page: Int!, $perPage: Int!, $action: String, $actor: String) {
        companyAuditLog(companyId: $companyId, page: $page, perPage: $perPage, action: $action, actor: $actor) {
          items { ${AUDIT_FIELDS} } page perPage total } }`,
      variables: (request) => {
        const q = request.query as { page: number; per_page: number; action?: string; actor?: string };
        return {
          companyId: (request.params as { company_id: string }).company_id,
          page: q.page,
          perPage: q.per_page,
          action: q.action ?? null,
          actor: q.actor ?? null,
        };
      },
      result: (data) => toPageBody(data.companyAuditLog as Page<AuditData>, auditEventBody),
    },
  },
];
