import { SchemaMigration } from '../../../db/schema-migration';

/** Why a processor event was ignored or failed, when there is more to say than its outcome (an unusable seat count). */
export class Migration20261204000000EventReasons extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.alterTable('processor_events', (table) => {
        table.text('reason').nullable();
      }),
    );
  }

  override down(): void {
    this.dropColumns('processor_events', 'reason');
  }
}
