import { Migration } from '@mikro-orm/migrations';

/**
 * Cloud-storage connector configuration per company (google_drive, onedrive):
 * enabled, OAuth client id, sealed client secret, tenant (onedrive), sync
 * interval. One row per company and connector; no row means the defaults.
 */
export class Migration20261122100900Connectors extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table \`connector_configs\` (\`id\` text not null, \`company_id\` text not null, \`name\` text not null, \`enabled\` integer not null default false, \`client_id\` text null, \`client_secret_sealed\` text null, \`tenant\` text null, \`sync_interval_minutes\` integer not null default 60, \`updated_at\` datetime not null, \`updated_by\` text null, constraint \`connector_configs_company_id_foreign\` foreign key(\`company_id\`) references \`companies\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`))`);
    this.addSql(`create index \`connector_configs_company_id_index\` on \`connector_configs\` (\`company_id\`)`);
    this.addSql(`create unique index \`connector_configs_company_id_name_unique\` on \`connector_configs\` (\`company_id\`, \`name\`)`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists \`connector_configs\``);
  }
}
