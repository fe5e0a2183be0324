import { SchemaMigration } from '../../../db/schema-migration';
import { searchKey } from '../../../search-key';

/**
 * The folded keys case-insensitive search compares (src/search-key.ts):
 * users' email and name, companies' name, with indexes in the lists' name
 * order (the whole order, so a page of it needs no sort). Existing rows get
 * theirs here, folded by the same function: SQL's lower() folds ASCII only,
 * so the keys cannot be computed in SQL.
 */
export class Migration20261201000000SearchKeys extends SchemaMigration {
  override async up(): Promise<void> {
    this.schema((schema) =>
      schema
        .alterTable('companies', (table) => {
          table.text('name_key').notNullable().defaultTo('');
          table.index(['name_key', 'name', 'id'], 'companies_name_key_name_id_index');
        })
        .alterTable('users', (table) => {
          table.text('email_key').notNullable().defaultTo('');
          table.text('name_key').nullable();
          table.index(['company_id', 'name_key', 'name', 'id'], 'users_company_id_name_key_name_id_index');
        }),
    );
    // Read now (the columns they fold exist already), written after the columns are added.
    const knex = this.getKnex();
    for (const { id, name } of await this.execute(knex('companies').select('id', 'name'))) {
      this.addSql(knex('companies').where('id', id).update({ name_key: searchKey(String(name)) }));
    }
    for (const { id, email, name } of await this.execute(knex('users').select('id', 'email', 'name'))) {
      this.addSql(knex('users').where('id', id).update({ email_key: searchKey(String(email)), name_key: name === null ? null : searchKey(String(name)) }));
    }
  }

  override down(): void {
    this.dropIndexIfExists('users_company_id_name_key_name_id_index');
    this.dropIndexIfExists('companies_name_key_name_id_index');
    this.dropColumns('users', 'email_key', 'name_key');
    this.dropColumns('companies', 'name_key');
  }
}
