import type { MigrationEntry } from '../../db/migrations';
import { Migration20261122100000MailOutbox } from './Migration20261122100000-mail-outbox';
import { Migration20261122101000MailSecrets } from './Migration20261122101000-mail-secrets';
import { Migration20261221000000MailSecretRefs } from './Migration20261221000000-mail-secret-refs';

/** The mail outbox's migrations; one that has shipped never changes the schema it builds. */
export const mailMigrations: MigrationEntry[] = [
  { name: 'Migration20261122100000MailOutbox', class: Migration20261122100000MailOutbox },
  { name: 'Migration20261122101000MailSecrets', class: Migration20261122101000MailSecrets },
  { name: 'Migration20261221000000MailSecretRefs', class: Migration20261221000000MailSecretRefs },
];
