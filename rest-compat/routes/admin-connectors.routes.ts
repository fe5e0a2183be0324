import { body, path, type RestRoute } from '../route';
import { actingCompany } from '../schemas';
import { SYNC_INTERVAL_BOUNDS } from '../../src/domains/connectors';

const WHO =
  'Owners and admins of the company and its API keys; a member gets 403. A superadmin may name any company with company_id; ' +
  'another company named by anyone else is 404, as an unknown one is.';

const connector = { name: path('name', { description: 'google_drive or onedrive; any other name is 404' }) };

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
    status: 200,
    problems: { 403: 'forbidden: the caller is not an owner or admin of the company', 404: 'No such company (superadmin)' },
    field: 'connectors',
    args: { companyId: actingCompany() },
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
    status: 200,
    problems: { 403: 'forbidden: the caller is not an owner or admin of the company', 404: 'No such connector, or no such company, or another company named by anyone but a superadmin' },
    field: 'updateConnector',
    args: { ...connector, input: body(), companyId: actingCompany() },
    bodyHints: {
      description: 'ConnectorPatchRequest: the fields to change; fields left out keep their value. Unknown fields are refused (422).',
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
    status: 200,
    problems: { 403: 'forbidden: the caller is not an owner or admin of the company', 404: 'No such connector, or no such company, or another company named by anyone but a superadmin' },
    field: 'testConnector',
    args: { ...connector, companyId: actingCompany() },
  },
];
