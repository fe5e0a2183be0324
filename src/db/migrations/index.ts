import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261122000000Initial } from './Migration20261122000000-initial';
import { Migration20261122100000MailOutbox } from './Migration20261122100000-mail-outbox';
import { Migration20261122100100Mfa } from './Migration20261122100100-mfa';
import { Migration20261122100200Sso } from './Migration20261122100200-sso';
import { Migration20261122100300LoginThrottlePasswordReset } from './Migration20261122100300-login-throttle-password-reset';
import { Migration20261122100400EmailChangeDeletion } from './Migration20261122100400-email-change-deletion';
import { Migration20261122100500SsoMfa } from './Migration20261122100500-sso-mfa';
import { Migration20261122100600UsageRecords } from './Migration20261122100600-usage-records';
import { Migration20261122100800SecurityPolicy } from './Migration20261122100800-security-policy';
import { Migration20261122100900Connectors } from './Migration20261122100900-connectors';
import { Migration20261122101000MailSecrets } from './Migration20261122101000-mail-secrets';

/** Applied in order on start; never edit a migration that has shipped. */
export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261122000000Initial', class: Migration20261122000000Initial },
  { name: 'Migration20261122100000MailOutbox', class: Migration20261122100000MailOutbox },
  { name: 'Migration20261122100100Mfa', class: Migration20261122100100Mfa },
  { name: 'Migration20261122100200Sso', class: Migration20261122100200Sso },
  { name: 'Migration20261122100300LoginThrottlePasswordReset', class: Migration20261122100300LoginThrottlePasswordReset },
  { name: 'Migration20261122100400EmailChangeDeletion', class: Migration20261122100400EmailChangeDeletion },
  { name: 'Migration20261122100500SsoMfa', class: Migration20261122100500SsoMfa },
  { name: 'Migration20261122100600UsageRecords', class: Migration20261122100600UsageRecords },
  { name: 'Migration20261122100800SecurityPolicy', class: Migration20261122100800SecurityPolicy },
  { name: 'Migration20261122100900Connectors', class: Migration20261122100900Connectors },
  { name: 'Migration20261122101000MailSecrets', class: Migration20261122101000MailSecrets },
];
