import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261122100000MailOutbox } from './Migration20261122100000-mail-outbox';
import { Migration20261122101000MailSecrets } from './Migration20261122101000-mail-secrets';

/** The mail outbox's migrations; never edit one that has shipped. */
export const mailMigrations: MigrationObject[] = [
  { name: 'Migration20261122100000MailOutbox', class: Migration20261122100000MailOutbox },
  { name: 'Migration20261122101000MailSecrets', class: Migration20261122101000MailSecrets },
];
