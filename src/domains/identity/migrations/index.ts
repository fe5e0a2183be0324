import type { MigrationEntry } from '../../../db/migrations';
import { Migration20261122000000Identity } from './Migration20261122000000-identity';
import { Migration20261122100100Mfa } from './Migration20261122100100-mfa';
import { Migration20261122100200Sso } from './Migration20261122100200-sso';
import { Migration20261122100300LoginThrottlePasswordReset } from './Migration20261122100300-login-throttle-password-reset';
import { Migration20261122100400EmailChangeDeletion } from './Migration20261122100400-email-change-deletion';
import { Migration20261122100500SsoMfa } from './Migration20261122100500-sso-mfa';
import { Migration20261122100800SecurityPolicy } from './Migration20261122100800-security-policy';
import { Migration20261123100000InvitationPendingUnique } from './Migration20261123100000-invitation-pending-unique';
import { Migration20261124100000ModuleKeys } from './Migration20261124100000-module-keys';
import { Migration20261201000000SearchKeys } from './Migration20261201000000-search-keys';
import { Migration20261220000000EmailNfc } from './Migration20261220000000-email-nfc';

/** Identity's migrations; one that has shipped never changes the schema it builds. */
export const identityMigrations: MigrationEntry[] = [
  // Its first tables came with the kernel's cross-domain baseline on databases created before the split.
  { name: 'Migration20261122000000Identity', class: Migration20261122000000Identity, replaces: ['Migration20261122000000Initial'] },
  { name: 'Migration20261122100100Mfa', class: Migration20261122100100Mfa },
  { name: 'Migration20261122100200Sso', class: Migration20261122100200Sso },
  { name: 'Migration20261122100300LoginThrottlePasswordReset', class: Migration20261122100300LoginThrottlePasswordReset },
  { name: 'Migration20261122100400EmailChangeDeletion', class: Migration20261122100400EmailChangeDeletion },
  { name: 'Migration20261122100500SsoMfa', class: Migration20261122100500SsoMfa },
  { name: 'Migration20261122100800SecurityPolicy', class: Migration20261122100800SecurityPolicy },
  { name: 'Migration20261123100000InvitationPendingUnique', class: Migration20261123100000InvitationPendingUnique },
  { name: 'Migration20261124100000ModuleKeys', class: Migration20261124100000ModuleKeys },
  { name: 'Migration20261201000000SearchKeys', class: Migration20261201000000SearchKeys },
  { name: 'Migration20261220000000EmailNfc', class: Migration20261220000000EmailNfc },
];
