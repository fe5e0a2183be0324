import { Migration } from '@mikro-orm/migrations';

/**
 * Usage records: one row per metered use of a model (company, optional user
 * and API key, model, feature, credits, tokens), read per company and time
 * range. No foreign keys: usage is billing history and outlives its user or key.
 */
export class Migration20261122100600UsageRecords extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table \`usage_records\` (\`id\` text not null, \`company_id\` text not null, \`user_id\` text null, \`api_key_id\` text null, \`model\` text not null, \`feature\` text not null, \`credits\` integer not null default 0, \`tokens\` integer not null default 0, \`created_at\` datetime not null, primary key (\`id\`))`);
    this.addSql(`create index \`usage_records_company_id_created_at_index\` on \`usage_records\` (\`company_id\`, \`created_at\`)`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists \`usage_records\``);
  }
}
