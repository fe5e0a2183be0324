import { DateTimeType, Entity, ManyToOne, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Company } from '../identity';

/**
 * A company's configuration of one cloud-storage connector (`google_drive`,
 * `onedrive`). A company without a row for a connector has the defaults
 * (disabled, nothing set); the row is created on the first update. The OAuth
 * client secret is stored sealed by the secret box (context
 * `connector:<companyId>:<name>`), never in clear.
 */
@Entity({ tableName: 'connector_configs' })
@Unique({ properties: ['company', 'name'] })
export class ConnectorConfig {
  [OptionalProps]?: 'id' | 'enabled' | 'clientId' | 'clientSecretSealed' | 'tenant' | 'syncIntervalMinutes' | 'updatedAt' | 'updatedBy';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Company, { deleteRule: 'cascade' })
  company!: Company;

  /** The connector: google_drive or onedrive. */
  @Property({ type: 'string', length: 32 })
  name!: string;

  @Property({ type: 'boolean' })
  enabled: boolean = false;

  @Property({ type: 'string', length: 256, nullable: true })
  clientId: string | null = null;

  /** The OAuth client secret, sealed (`v1:<keyId>:…`); null when not set. */
  @Property({ type: 'text', nullable: true })
  clientSecretSealed: string | null = null;

  /** onedrive only: the Microsoft Entra tenant (null: `common`). */
  @Property({ type: 'string', length: 256, nullable: true })
  tenant: string | null = null;

  @Property({ type: 'integer' })
  syncIntervalMinutes: number = 60;

  @Property({ type: DateTimeType })
  updatedAt: Date = new Date();

  /** Id of the user or API key that made the last change. */
  @Property({ type: 'string', length: 64, nullable: true })
  updatedBy: string | null = null;
}
