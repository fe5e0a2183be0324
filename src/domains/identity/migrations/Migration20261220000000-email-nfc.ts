import { SchemaMigration } from '../../../db/schema-migration';

/** An address in the form normalizeEmail gives since this migration (stored addresses are trimmed and lower-cased already). */
const nfc = (email: string): string => email.normalize('NFC');

/**
 * Addresses stored before emails were normalized to Unicode NFC are
 * rewritten in NFC, the form every lookup now uses, so a user whose address
 * was typed decomposed can still sign in: users' email, invitations' email
 * and the new address a pending email change will set. `email_key` folds by
 * NFKC, so it is the same for both forms and stays as it is.
 *
 * Two users whose addresses differ only in their normal form (the old code
 * let an invitation in the other form through) are left as they are, both of
 * them: merging accounts is not a migration's call, and rewriting either
 * would break the unique index. The one stored in NFC keeps signing in; the
 * other no longer can by password until an administrator gives it another
 * address. A pending invitation whose NFC form another pending invitation of
 * the company holds stays as it is, for the same index.
 */
export class Migration20261220000000EmailNfc extends SchemaMigration {
  override async up(): Promise<void> {
    const knex = this.getKnex();
    const users = (await this.execute(knex('users').select('id', 'email'))) as { id: string; email: string }[];
    const holders = new Map<string, number>();
    for (const { email } of users) holders.set(nfc(email), (holders.get(nfc(email)) ?? 0) + 1);
    for (const { id, email } of users) {
      if (nfc(email) !== email && holders.get(nfc(email)) === 1) this.addSql(knex('users').where('id', id).update({ email: nfc(email) }));
    }

    const invitations = (await this.execute(knex('invitations').select('id', 'company_id', 'email', 'status'))) as {
      id: string;
      company_id: string;
      email: string;
      status: string;
    }[];
    const pending = new Map<string, number>();
    const pendingKey = (row: { company_id: string; email: string }) => `${row.company_id} ${nfc(row.email)}`;
    for (const row of invitations) if (row.status === 'pending') pending.set(pendingKey(row), (pending.get(pendingKey(row)) ?? 0) + 1);
    for (const row of invitations) {
      if (nfc(row.email) === row.email || (row.status === 'pending' && pending.get(pendingKey(row))! > 1)) continue;
      this.addSql(knex('invitations').where('id', row.id).update({ email: nfc(row.email) }));
    }

    // Unused email-change links: confirming one sets the address it holds.
    const changes = (await this.execute(
      knex('one_time_tokens').select('id', 'data').where('purpose', 'email_change').whereNull('used_at'),
    )) as { id: string; data: string | Record<string, unknown> | null }[];
    for (const { id, data } of changes) {
      const parsed = (typeof data === 'string' ? JSON.parse(data) : data) as Record<string, unknown> | null;
      const newEmail = parsed?.newEmail;
      if (typeof newEmail !== 'string' || nfc(newEmail) === newEmail) continue;
      this.addSql(knex('one_time_tokens').where('id', id).update({ data: JSON.stringify({ ...parsed, newEmail: nfc(newEmail) }) }));
    }
  }

  override down(): void {
    // Nothing to undo: the NFC form is the same address.
  }
}
