import type { MigrationEntry } from '../../../db/migrations';
import { Migration20261124130000Chat } from './Migration20261124130000-chat';
import { Migration20261127000000ChatRevision } from './Migration20261127000000-chat-revision';
import { Migration20261202000000ChatMessageIndex } from './Migration20261202000000-chat-message-index';

/** The AI modules' migrations; one that has shipped never changes the schema it builds. */
export const aiMigrations: MigrationEntry[] = [
  { name: 'Migration20261124130000Chat', class: Migration20261124130000Chat },
  { name: 'Migration20261127000000ChatRevision', class: Migration20261127000000ChatRevision },
  { name: 'Migration20261202000000ChatMessageIndex', class: Migration20261202000000ChatMessageIndex },
];
