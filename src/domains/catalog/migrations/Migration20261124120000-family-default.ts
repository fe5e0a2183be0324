import { SchemaMigration } from '../../../db/schema-migration';

/** Which model a family name stands for when a caller asks for the family (`"model": "gpt"`). */
export class Migration20261124120000FamilyDefault extends SchemaMigration {
  override up(): void {
    this.schema((schema) =>
      schema.alterTable('models', (table) => {
        table.boolean('family_default').notNullable().defaultTo(this.literal(false));
      }),
    );
  }

  override down(): void {
    this.dropColumns('models', 'family_default');
  }
}
