import type { MigrationEntry } from '../../../db/migrations';
import { Migration20261124010000Payments } from './Migration20261124010000-payments';

/** The payments domain's migrations; one that has shipped never changes the schema it builds. */
export const paymentsMigrations: MigrationEntry[] = [{ name: 'Migration20261124010000Payments', class: Migration20261124010000Payments }];
