import { SchemaMigration } from '../../../db/schema-migration';

/** Users' AI-modules keys share the api_keys table: the owning user and the key's scopes (null for company keys). */
export class Migration20261124100000ModuleKeys extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.alterTable('api_keys', (table) => {
        table.text('user_id').nullable();
        table.text('scopes').nullable();
        table.foreign('user_id', 'api_keys_user_id_foreign').references('id').inTable('users').onDelete('cascade').onUpdate('cascade');
        table.index(['user_id'], 'api_keys_user_id_index');
        table.index(['user_id', 'revoked_at'], 'api_keys_user_id_revoked_at_index');
      }),
    );
  }

  override down(): void {
    this.dropIndexIfExists('api_keys_user_id_revoked_at_index');
    this.dropIndexIfExists('api_keys_user_id_index');
    this.dropColumns('api_keys', 'user_id', 'scopes');
  }
}
