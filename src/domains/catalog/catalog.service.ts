import type { Orm } from '../../db/orm';
import { Model } from './model.entity';
import { currentEm } from '../../db/unit-of-work';

export interface ModelSeed {
  id: string;
  display_name: string;
  provider: string;
  family: string;
  credit_cost: number;
  context_length: number;
  blocked?: boolean;
}

export class CatalogService {
  constructor(private readonly orm: Orm) {}

  /** Models callers may use: every model not blocked by an administrator. */
  async availableModels(): Promise<Model[]> {
    return currentEm(this.orm).find(Model, { blocked: false }, { orderBy: { provider: 'asc', displayName: 'asc' } });
  }

  async availableModel(id: string): Promise<Model | null> {
    return currentEm(this.orm).findOne(Model, { id, blocked: false });
  }

  /** Inserts catalog entries that are missing; never overwrites an administrator's edits. */
  async seed(models: ModelSeed[]): Promise<number> {
    const em = currentEm(this.orm);
    const existing = new Set((await em.find(Model, {}, { fields: ['id'] })).map((m) => m.id));
    let added = 0;
    for (const m of models) {
      if (existing.has(m.id)) continue;
      em.create(Model, {
        id: m.id,
        displayName: m.display_name,
        provider: m.provider,
        family: m.family,
        creditCost: m.credit_cost,
        contextLength: m.context_length,
        blocked: m.blocked ?? false,
      });
      added++;
    }
    await em.flush();
    return added;
  }
}
