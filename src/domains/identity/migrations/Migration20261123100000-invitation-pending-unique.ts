import { SchemaMigration } from '../../../db/schema-migration';

/**
 * At most one pending invitation per company and address, kept by the
 * database whatever the number of connections or processes. A pending row
 * past its expiry no longer counts as pending: such rows are marked expired
 * first (the service does the same before it invites or resends), and of
 * any remaining duplicates only the newest stays pending.
 */
export class Migration20261123100000InvitationPendingUnique extends SchemaMigration {
  override up(): void {
    const knex = this.getKnex();
    this.addSql(knex('invitations').where('status', 'pending').where('expires_at', '<=', Date.now()).update({ status: 'expired' }));
    this.addSql(
      knex('invitations as older')
        .where('older.status', 'pending')
        .whereExists((newer) =>
          newer
            .select(knex.raw('1'))
            .from('invitations as newer')
            .whereRaw('newer.company_id = older.company_id and newer.email = older.email')
            .where('newer.status', 'pending')
            .whereRaw('newer.created_at > older.created_at'),
        )
        .update({ status: 'revoked' }),
    );
    this.schema((schema) =>
      schema.alterTable('invitations', (table) => {
        table.unique(['company_id', 'email'], { indexName: 'invitations_pending_unique', predicate: knex.whereRaw("status = 'pending'") });
      }),
    );
  }

  override down(): void {
    this.dropIndexIfExists('invitations_pending_unique');
  }
}
