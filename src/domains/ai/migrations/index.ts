import type { MigrationEntry } from '../../../db/migrations';
import { Migration20261124130000Chat } from './Migration20261124130000-chat';

/** The AI modules' migrations; one that has shipped never changes the schema it builds. */
export const aiMigrations: MigrationEntry[] = [{ name: 'Migration20261124130000Chat', class: Migration20261124130000Chat }];
