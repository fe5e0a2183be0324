import { SchemaMigration } from '../../../db/schema-migration';
import { readSeed } from '../../../seed-data';
import { seedPriceMicros, type ModelSeed } from '../catalog.service';

/**
 * The models stored before prices existed (price 0) get the seed's price,
 * once. Seeding filled a price of 0 in on every start, so a model an
 * administrator made free was priced again at the next restart; seeding now
 * leaves stored models alone, and this is the one backfill. On a database
 * that started since prices came, a 0 here was an administrator's since the
 * last start, which that start would have priced again too.
 */
export class Migration20261223000000ModelPriceBackfill extends SchemaMigration {
  override up(): void {
    const knex = this.getKnex();
    for (const model of readSeed<ModelSeed[]>('models.json')) {
      const micros = seedPriceMicros(model.price_per_1k_tokens);
      if (micros > 0) this.addSql(knex('models').where({ id: model.id, price_micros_per1k_tokens: 0 }).update({ price_micros_per1k_tokens: micros }));
    }
  }

  override down(): void {
    // Nothing to undo: the prices stay as data.
  }
}
