import type { FastifyRequest } from 'fastify';
import type { JsonSchema, RestRoute } from '../route';
import { actingCompanyOf, actingCompanyQuery, nullable, uuid } from '../schemas';
import {
  CLIENT_ID_MAX,
  CLIENT_SECRET_MAX,
  CONNECTOR_FIELDS,
  SYNC_INTERVAL_BOUNDS,
  TENANT_MAX,
  type ConnectorPatch,
} from '../../src/domains/connectors';

const WHO =
  'Owners and admins of the company and its API keys; a member gets 403. A superadmin may name any company with company_id; ' +
  'anyone else naming another company gets 403.';

const FIELDS = 'companyId name enabled clientId clientSecretSet tenant syncIntervalMinutes updatedAt updatedBy';

interface ConnectorData {
  companyId: string;
  name: string;
  enabled: boolean;
  clientId: string | null;
  clientSecretSet: boolean;
  tenant: string | null;
  syncIntervalMinutes: number;
  updatedAt: string | null;
  updatedBy: string | null;
}

const connectorBody = (c: ConnectorData) => ({
  company_id: c.companyId,
  name: c.name,
  enabled: c.enabled,
  client_id: c.clientId,
  client_secret_set: c.clientSecretSet,
  tenant: c.tenant,
  sync_interval_minutes: c.syncIntervalMinutes,
  updated_at: c.updatedAt,
  updated_by: c.updatedBy,
});

const connector: JsonSchema = {
  type: 'object',
  required: ['company_id', 'name', 'enabled', 'client_id', 'client_secret_set', 'tenant', 'sync_interval_minutes', 'updated_at', 'updated_by'],
  properties: {
    company_id: uuid,
    name: { type: 'string', enum: ['google_drive', 'onedrive'] },
    enabled: { type: 'boolean' },
    client_id: nullable('string', { description: 'The OAuth client id' }),
    client_secret_set: { type: 'boolean', description: 'Whether a client secret is stored; the secret is never returned' },
    tenant: nullable('string', { description: 'onedrive only: the Microsoft tenant (null: common); always null for google_drive' }),
    sync_interval_minutes: { type: 'integer', minimum: SYNC_INTERVAL_BOUNDS.min, maximum: SYNC_INTERVAL_BOUNDS.max },
    updated_at: nullable('string', { format: 'date-time', description: 'Null while never configured' }),
    updated_by: nullable('string', { description: 'The user or API key that made the last change' }),
  },
};

const nameParams: JsonSchema = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', maxLength: 64, description: 'google_drive or onedrive; any other name is 404' } },
};
const nameOf = (request: FastifyRequest) => (request.params as { name: string }).name;

const patchBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'ConnectorPatchRequest: the fields to change; fields left out keep their value. Unknown fields are refused (422).',
  properties: {
    enabled: { type: 'boolean', description: 'Enabling needs client_id and client_secret set (422 otherwise)' },
    client_id: nullable('string', { maxLength: CLIENT_ID_MAX, description: 'The OAuth client id; null clears it' }),
    client_secret: nullable('string', {
      maxLength: CLIENT_SECRET_MAX,
      description: 'The OAuth client secret; stored encrypted, never returned (see client_secret_set); null clears it',
    }),
    tenant: nullable('string', {
      maxLength: TENANT_MAX,
      description: 'onedrive only (422 for google_drive): tenant id, domain, common, organizations or consumers; null for common',
    }),
    sync_interval_minutes: {
      type: 'integer',
      minimum: SYNC_INTERVAL_BOUNDS.min,
      maximum: SYNC_INTERVAL_BOUNDS.max,
      description: `Minutes between automatic syncs (default ${SYNC_INTERVAL_BOUNDS.default})`,
    },
  },
};

function patchOf(request: FastifyRequest): ConnectorPatch {
  const body = request.body as Record<string, unknown>;
  const input: Record<string, unknown> = {};
  for (const [camel, snake] of Object.entries(CONNECTOR_FIELDS)) {
    if (Object.prototype.hasOwnProperty.call(body, snake)) input[camel] = body[snake];
  }
  return input as ConnectorPatch;
}

const testResult: JsonSchema = {
  type: 'object',
  required: ['name', 'ok', 'checks'],
  properties: {
    name: { type: 'string' },
    ok: { type: 'boolean', description: 'Every check passed' },
    checks: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'ok', 'detail'],
        properties: {
          name: { type: 'string', description: 'configuration, client_secret or token_endpoint' },
          ok: { type: 'boolean' },
          detail: { type: 'string' },
        },
      },
    },
  },
};

/** A company's cloud-storage connectors (google_drive, onedrive). */
export const adminConnectorRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/admin/connectors',
    operationId: 'listConnectors',
    summary: "The company's cloud-storage connectors",
    description:
      'Both connectors, google_drive and onedrive; one never configured shows the defaults (disabled, nothing set, ' +
      `sync every ${SYNC_INTERVAL_BOUNDS.default} minutes, updated_at null). The client secret is never returned. ${WHO}`,
    tag: 'Administration',
    auth: 'required',
    status: 200,
    request: { querystring: actingCompanyQuery },
    response: { type: 'array', items: connector },
    problems: { 403: 'The caller is not an owner or admin of the company', 404: 'No such company (superadmin)' },
    graphql: {
      document: `query Connectors($companyId: ID) { connectors(companyId: $companyId) { ${FIELDS} } }`,
      variables: (request) => ({ companyId: actingCompanyOf(request) }),
      result: (data) => (data.connectors as ConnectorData[]).map(connectorBody),
    },
  },
  {
    method: 'PATCH',
    path: '/admin/connectors/:name',
    operationId: 'updateConnector',
    summary: 'Change a connector',
    description:
      'Sets the fields given; fields left out keep their value. The client secret is stored encrypted and never returned. ' +
      'An enabled connector needs client_id and client_secret (422 otherwise); tenant is for onedrive only. ' +
      `Audited connector.updated with the changed field names. ${WHO}`,
    tag: 'Administration',
    auth: 'required',
    status: 200,
    request: { params: nameParams, querystring: actingCompanyQuery, body: patchBody },
    response: connector,
    problems: { 403: 'The caller is not an owner or admin of the company', 404: 'No such connector, or no such company (superadmin)' },
    graphql: {
      document: `mutation UpdateConnector($name: String!, $input: ConnectorInput!, $companyId: ID) {
        updateConnector(name: $name, input: $input, companyId: $companyId) { ${FIELDS} } }`,
      variables: (request) => ({ name: nameOf(request), input: patchOf(request), companyId: actingCompanyOf(request) }),
      result: (data) => connectorBody(data.updateConnector as ConnectorData),
    },
  },
  {
    method: 'POST',
    path: '/admin/connectors/:name/test',
    operationId: 'testConnector',
    summary: 'Test a connector',
    description:
      'Checks the configuration (client_id and client_secret set, the secret decrypts), then that the provider\'s token ' +
      'endpoint answers (https only, 5 second limit, never to loopback, private, link-local or metadata addresses; no ' +
      'credentials are sent). A failed check answers 200 with ok false and the check\'s detail. ' +
      `Audited connector.tested. ${WHO}`,
    tag: 'Administration',
    auth: 'required',
    status: 200,
    request: { params: nameParams, querystring: actingCompanyQuery },
    response: testResult,
    problems: { 403: 'The caller is not an owner or admin of the company', 404: 'No such connector, or no such company (superadmin)' },
    graphql: {
      document: `mutation TestConnector($name: String!, $companyId: ID) {
        testConnector(name: $name, companyId: $companyId) { name ok checks { name ok detail } } }`,
      variables: (request) => ({ name: nameOf(request), companyId: actingCompanyOf(request) }),
      result: (data) => data.testConnector,
    },
  },
];
