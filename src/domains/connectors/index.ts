import { defineDomain, type ApiOf } from '../../kernel/domain';
import { auditDomain } from '../audit';
import { identityDomain } from '../identity';
import { loadConnectorsConfig } from './config';
import { ConnectorConfig } from './connector-config.entity';
import { ConnectorService } from './connectors.service';
import { connectorsMigrations } from './migrations';

export { ConnectorConfig } from './connector-config.entity';
export { type ConnectorsConfig, loadConnectorsConfig } from './config';
export {
  ConnectorService,
  CONNECTOR_FIELDS,
  CLIENT_ID_MAX,
  CLIENT_SECRET_MAX,
  SYNC_INTERVAL_BOUNDS,
  TENANT_MAX,
  connectorNames,
  type ConnectorName,
  type ConnectorPatch,
  type ConnectorView,
} from './connectors.service';

/** A company's cloud-storage connectors (google_drive, onedrive): settings, sealed secrets, a reachability test. */
export const connectorsDomain = defineDomain({
  name: 'connectors',
  requires: { audit: auditDomain, identity: identityDomain },
  entities: [ConnectorConfig],
  migrations: connectorsMigrations,
  config: (env) => ({ connectors: loadConnectorsConfig(env) }),
  create: ({ kernel, config, deps }) => ({
    connectors: new ConnectorService(kernel.orm, deps.audit.log, kernel.secretBox, config.connectors, deps.identity.companies),
  }),
});

export type ConnectorsApi = ApiOf<typeof connectorsDomain>;
