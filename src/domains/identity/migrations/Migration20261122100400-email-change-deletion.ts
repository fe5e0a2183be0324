import { SchemaMigration } from '../../../db/schema-migration';

/**
 * Account deletion: when a requested deletion runs (indexed for the sweep).
 * Email-change links are one-time tokens (purpose `email_change`) in the
 * `one_time_tokens` table of Migration20261122100300.
 */
export class Migration20261122100400EmailChangeDeletion extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.alterTable('users', (table) => {
        table.datetime('deletion_scheduled_for').nullable();
        table.index(['deletion_scheduled_for'], 'users_deletion_scheduled_for_index');
      }),
    );
  }

  override down(): void {
    this.dropIndexIfExists('users_deletion_scheduled_for_index');
    this.dropColumns('users', 'deletion_scheduled_for');
  }
}
